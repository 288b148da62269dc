#include "runtime/dlmonitor/context_tree.h"

#include <mutex>
#include <unordered_map>

#include "runtime/common/hot_path.h"

namespace deepcontext::dlmonitor {
namespace {

constexpr size_t kIndexThreshold = 16;

struct FrameKeyHash {
  size_t operator()(const FrameKey& k) const {
    uint64_t h = (uint64_t{k.kind} << 56) ^ (uint64_t{k.name} << 24) ^
                 (uint64_t{k.file} << 8) ^ k.line;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return static_cast<size_t>(h);
  }
};

}  // namespace

struct ContextTree::ChildIndex {
  std::unordered_map<FrameKey, ContextId, FrameKeyHash> map;
};

ContextTree::Node::~Node() { delete index; }

ContextTree::ContextTree() {
  size_t index = 0;
  nodes_.Append(&index);  // id 0: "no context", never ready
  Node* root = nodes_.Append(&index);
  root->key.kind = 0;
  root->parent = kNoContext;
  root->ready.store(true, std::memory_order_release);
}

DEEPCONTEXT_HOT
ContextId ContextTree::FindChildLocked(const Node& parent,
                                       const FrameKey& key) const {
  if (parent.index != nullptr) [[unlikely]] {
    auto it = parent.index->map.find(key);
    return it == parent.index->map.end() ? kNoContext : it->second;
  }
  for (const ChildEntry& child : parent.children) {
    if (child.key == key) return child.id;
  }
  return kNoContext;
}

void ContextTree::AddChildLocked(Node& parent, ContextId child,
                                 const FrameKey& key) {
  if (parent.index != nullptr) {
    parent.index->map.emplace(key, child);
    return;
  }
  parent.children.push_back(ChildEntry{key, child});
  if (parent.children.size() > kIndexThreshold) {
    parent.index = new ChildIndex;
    for (const ChildEntry& c : parent.children) parent.index->map.emplace(c.key, c.id);
    std::vector<ChildEntry>().swap(parent.children);
  }
}

void ContextTree::SetLimit(ContextId max_contexts, const FrameKey& other_key) {
  max_contexts_ = max_contexts;
  other_key_ = other_key;
}

ContextId ContextTree::AppendChildLocked(Node& parent, ContextId parent_id,
                                         const FrameKey& key, bool folds) {
  size_t index = 0;
  Node* node = nodes_.Append(&index);
  if (node == nullptr) return kNoContext;
  node->key = key;
  node->parent = parent_id;
  node->folds = folds;
  node->ready.store(true, std::memory_order_release);
  AddChildLocked(parent, index, key);
  return index;
}

DEEPCONTEXT_HOT
ContextId ContextTree::Child(ContextId parent_id, const FrameKey& key) {
  Node* parent = nodes_.At(parent_id);
  if (parent == nullptr || !parent->ready.load(std::memory_order_acquire)) {
    return kNoContext;
  }
  if (parent->folds) {
    folded_.fetch_add(1, std::memory_order_relaxed);
    return parent_id;
  }
  std::lock_guard<SpinLock> guard(parent->lock);
  ContextId found = FindChildLocked(*parent, key);
  if (found != kNoContext) return found;
  if (max_contexts_ == 0 || nodes_.Reserved() < max_contexts_ + 2) {
    return AppendChildLocked(*parent, parent_id, key, /*folds=*/false);
  }
  folded_.fetch_add(1, std::memory_order_relaxed);
  found = FindChildLocked(*parent, other_key_);
  if (found != kNoContext) return found;
  return AppendChildLocked(*parent, parent_id, other_key_, /*folds=*/true);
}

bool ContextTree::Get(ContextId id, FrameKey* key, ContextId* parent) const {
  const Node* node = nodes_.At(id);
  if (node == nullptr || !node->ready.load(std::memory_order_acquire)) {
    return false;
  }
  if (key != nullptr) *key = node->key;
  if (parent != nullptr) *parent = node->parent;
  return true;
}

ContextId ContextTree::End() const { return nodes_.Reserved(); }

}  // namespace deepcontext::dlmonitor
