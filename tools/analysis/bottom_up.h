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
  // Exclusive value of the top-level frame accumulated over the call paths
  // that pass through this node. A top-level node holds the frame's whole
  // exclusive value.
  double value = 0;
  double calls = 0;  // "calls" of the top-level frame along the same paths
  std::vector<uint32_t> children;  // sorted by value, descending
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
                            std::optional<MetricIndex> calls_metric);

  // Number of nodes, the virtual root included.
  size_t size() const { return nodes_.size(); }

  // Returns the node at index; index must be < size().
  const CallerNode& node(uint32_t index) const { return nodes_[index]; }

 private:
  std::vector<CallerNode> nodes_;
};

}  // namespace deepcontext::analysis
