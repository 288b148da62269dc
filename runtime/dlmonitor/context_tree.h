// The process-wide calling context tree: one node per distinct call path.
//
// Nodes carry only their frame; metrics live with the tools that registered
// for events and index their own storage by context id. Ids are dense
// (root = 1) and nodes are never removed, so an id stays meaningful for the
// whole process and can be used as a key without holding references.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "runtime/common/chunked_array.h"
#include "runtime/common/spin_lock.h"
#include "runtime/dlmonitor/string_table.h"

namespace deepcontext::dlmonitor {

using ContextId = uint64_t;
inline constexpr ContextId kNoContext = 0;
inline constexpr ContextId kRootContext = 1;

// What a node stands for; `kind` uses dlmonitor_frame_kind_t values.
struct FrameKey {
  uint32_t kind = 0;
  StringId name = 0;
  StringId file = 0;
  uint32_t line = 0;
  bool operator==(const FrameKey&) const = default;
};

// A native frame keyed by its return address until it is read: `name` and
// `file` hold the address's low and high 32 bits, `line` is 0. Not one of
// dlmonitor_frame_kind_t's values: readers get DLMONITOR_FRAME_NATIVE and
// its name (CallPathBuilder::Named).
inline constexpr uint32_t kUnnamedNativeFrame = 0x106;

inline FrameKey UnnamedNativeKey(uintptr_t pc) {
  const auto address = static_cast<uint64_t>(pc);
  return FrameKey{kUnnamedNativeFrame, static_cast<StringId>(address),
                  static_cast<StringId>(address >> 32), 0};
}

inline uintptr_t AddressOfUnnamedNative(const FrameKey& key) {
  return static_cast<uintptr_t>(static_cast<uint64_t>(key.name) |
                                (static_cast<uint64_t>(key.file) << 32));
}

// Contexts a tree creates before folding new call paths into [other]
// nodes, unless DEEPCONTEXT_MAX_CONTEXTS says otherwise: far more than the
// distinct paths of ordinary programs, small enough that the tree and the
// profile written from it stay within a few hundred MB.
inline constexpr ContextId kDefaultMaxContexts = 2'000'000;
// Name of the node new paths are folded into past the cap.
inline constexpr const char* kOtherContextsName =
    "[other: paths beyond the context limit]";

class ContextTree {
 public:
  ContextTree();

  // Caps the contexts created from now on at max_contexts (0: no cap but
  // the tree's capacity). Past the cap, a path's new frames all go to one
  // child of the deepest existing context, keyed other_key, which is a
  // leaf: whatever would be created below it is folded into it. So the tree
  // grows by at most one such node per existing context. [once, at start]
  void SetLimit(ContextId max_contexts, const FrameKey& other_key);

  // The child of `parent` with `key`, created on first use; past the limit
  // the [other] child of parent, and parent itself when it is an [other]
  // node; kNoContext when parent is invalid or the tree is full.
  // [any thread]
  ContextId Child(ContextId parent, const FrameKey& key);

  // How many times a new context was folded into an [other] node.
  // [any thread]
  uint64_t folded() const { return folded_.load(std::memory_order_relaxed); }

  // Frame and parent of `id`; false for unknown ids. [any thread]
  bool Get(ContextId id, FrameKey* key, ContextId* parent) const;

  // One past the largest id that may exist; ids below it that are not yet
  // fully created are reported as unknown by Get. [any thread]
  ContextId End() const;

 private:
  // Children are a short vector scanned linearly, which is what nearly all
  // nodes need; wide nodes (thousands of Python lines under one function)
  // switch to a hash index. The vector holds each child's key beside its
  // id: a scan then reads a few adjacent lines instead of one line of each
  // child's node, scattered over the tree (a Python line's node has a child
  // per line of the function it calls, most not in cache when an op looks
  // one up).
  struct ChildIndex;
  struct ChildEntry {
    FrameKey key;
    ContextId id;
  };
  struct Node {
    ~Node();
    FrameKey key;
    ContextId parent = kNoContext;
    std::atomic<bool> ready{false};
    bool folds = false;  // an [other] node: absorbs every path below it
    SpinLock lock;  // guards children and index
    // Until the node switches to `index`, which then holds them all.
    std::vector<ChildEntry> children;
    ChildIndex* index = nullptr;
  };

  ContextId FindChildLocked(const Node& parent, const FrameKey& key) const;
  void AddChildLocked(Node& parent, ContextId child, const FrameKey& key);

  // Creates a child of parent with key. [parent's lock held]
  ContextId AppendChildLocked(Node& parent, ContextId parent_id,
                              const FrameKey& key, bool folds);

  ChunkedArray<Node> nodes_;
  ContextId max_contexts_ = 0;
  FrameKey other_key_;
  std::atomic<uint64_t> folded_{0};
};

}  // namespace deepcontext::dlmonitor
