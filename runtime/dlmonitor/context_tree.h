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

class ContextTree {
 public:
  ContextTree();

  // The child of `parent` with `key`, created on first use; kNoContext when
  // parent is invalid or the tree is full. [any thread]
  ContextId Child(ContextId parent, const FrameKey& key);

  // Frame and parent of `id`; false for unknown ids. [any thread]
  bool Get(ContextId id, FrameKey* key, ContextId* parent) const;

  // One past the largest id that may exist; ids below it that are not yet
  // fully created are reported as unknown by Get. [any thread]
  ContextId End() const;

 private:
  // Children are a short vector scanned linearly, which is what nearly all
  // nodes need; wide nodes (thousands of Python lines under one function)
  // switch to a hash index.
  struct ChildIndex;
  struct Node {
    ~Node();
    FrameKey key;
    ContextId parent = kNoContext;
    std::atomic<bool> ready{false};
    SpinLock lock;  // guards children and index
    std::vector<ContextId> children;
    ChildIndex* index = nullptr;
  };

  ContextId FindChildLocked(const Node& parent, const FrameKey& key) const;
  void AddChildLocked(Node& parent, ContextId child, const FrameKey& key);

  ChunkedArray<Node> nodes_;
};

}  // namespace deepcontext::dlmonitor
