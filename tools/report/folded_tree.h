// The calling context tree as the top-down view shows it: frames that only
// add noise (torch's Module._call_impl wrappers, the profiler's own native
// frames) are spliced out, their children joining the caller and merging
// with its children of the same frame.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::report {

// Whether a frame is spliced out of the views.
enum class Folding {
  kNone,     // every frame is shown
  kDefault,  // torch's module wrappers and the profiler's frames are hidden
};

// True when folding hides frame.
bool IsFolded(const analysis::Frame& frame, Folding folding);

// A lazily built view of a ProfileTree. Only the nodes whose children are
// asked for are expanded, so a report that shows a few hundred rows of a
// million-node profile does a few hundred rows' work. A view node stands for
// one or more tree nodes with the same frame (siblings once a wrapper
// between them and their parent is gone). Values stay consistent: a hidden
// frame's own (exclusive) value is added to the node it is folded into.
class FoldedTree {
 public:
  using ViewNode = uint32_t;
  static constexpr ViewNode kRootNode = 0;

  FoldedTree(const analysis::ProfileTree& tree, analysis::MetricIndex metric,
             std::optional<analysis::MetricIndex> calls, Folding folding);

  // The children of node, in the order of the tree (callers sort them).
  const std::vector<ViewNode>& Children(ViewNode node);

  const analysis::Frame& frame(ViewNode node) const;
  double Inclusive(ViewNode node) const { return nodes_[node].inclusive; }
  double Exclusive(ViewNode node) const { return nodes_[node].exclusive; }
  double Calls(ViewNode node) const { return nodes_[node].calls; }

 private:
  struct Node {
    analysis::FrameId frame = 0;
    // Tree nodes whose children this node shows: the merged nodes and every
    // hidden node folded into them.
    std::vector<analysis::NodeIndex> sources;
    double inclusive = 0;
    double exclusive = 0;
    double calls = 0;
    bool expanded = false;
    std::vector<ViewNode> children;
  };

  // Creates a view node for the visible tree nodes `members` (same frame).
  ViewNode MakeNode(const std::vector<analysis::NodeIndex>& members);

  const analysis::ProfileTree& tree_;
  analysis::MetricIndex metric_;
  std::optional<analysis::MetricIndex> calls_;
  Folding folding_;
  // Per FrameId: hidden or not, computed once.
  std::vector<bool> hidden_frames_;
  std::vector<Node> nodes_;
};

}  // namespace deepcontext::report
