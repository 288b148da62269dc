// The bottom-up (callers) view: which code paths lead to the frames that
// carry exclusive cost.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::analysis {

// One node of the bottom-up tree. A top-level node is a distinct frame; its
// children are the frames that called it, their children the callers'
// callers, and so on up to the thread (or process).
struct CallerNode {
  FrameId frame = 0;
  uint32_t parent = 0;
  uint32_t depth = 0;  // 1 for top-level frames, 0 for the virtual root
  // Exclusive value of the top-level frame accumulated over the call paths
  // that pass through this node. A top-level node holds the frame's whole
  // exclusive value.
  double value = 0;
  double calls = 0;  // "calls" of the top-level frame along the same paths
  // False when the node has callers that were not built because of
  // BottomUpLimits; its children are then empty.
  bool expanded = true;
  std::vector<uint32_t> children;  // sorted by value, descending
};

// Bounds on how much of the bottom-up tree is built. The full tree holds one
// node per (leaf, ancestor) pair, which for deep or recursive programs is far
// more than anyone reads, so views build only what they will show.
struct BottomUpLimits {
  // Nodes whose |value| is below this are created but not expanded.
  double min_value = 0;
  // Nodes at this depth are created but not expanded; 0 = unlimited.
  uint32_t max_depth = 0;
  // Once this many nodes exist no further node is expanded; 0 = unlimited.
  size_t max_nodes = 0;
  // Once this many call-path steps (one path moved to its caller) were
  // taken no further node is expanded; 0 = unlimited. Deep recursion with
  // cost at every level makes the steps grow with the square of the depth
  // (a 100k-deep recursion needs 5e9) while the tree shown stays one chain,
  // so this bound keeps such views within a fraction of a second.
  size_t max_steps = 20'000'000;
};

// The inverted tree. Node 0 is a virtual root whose children are the frames
// that have exclusive value, and whose value is their sum.
class BottomUpTree {
 public:
  // Index of the virtual root.
  static constexpr uint32_t kRootNode = 0;

  // Builds the bottom-up tree of metric; calls_metric, when given, fills
  // CallerNode::calls.
  static BottomUpTree Build(const ProfileTree& tree, MetricIndex metric,
                            std::optional<MetricIndex> calls_metric,
                            const BottomUpLimits& limits = {});

  // Number of nodes, the virtual root included.
  size_t size() const { return nodes_.size(); }

  // Returns the node at index; index must be < size().
  const CallerNode& node(uint32_t index) const { return nodes_[index]; }

  // True when BottomUpLimits::max_nodes or max_steps stopped the expansion
  // of a node that the other limits would have expanded.
  bool truncated() const { return truncated_; }

 private:
  class Builder;

  std::vector<CallerNode> nodes_;
  bool truncated_ = false;
};

}  // namespace deepcontext::analysis
