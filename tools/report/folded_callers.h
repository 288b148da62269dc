// The bottom-up tree as the report shows it: callers that only add noise
// (torch's Module._call_impl wrappers, the profiler's own native frames) are
// replaced by their own callers, merged with siblings of the same frame.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/analysis/bottom_up.h"
#include "tools/report/folded_tree.h"

namespace deepcontext::report {

// A lazily built view of an analysis::BottomUpTree; see FoldedTree for the
// top-down counterpart. Top-level rows (the frames whose exclusive value is
// split) of hidden frames are left out, as in the flat view.
class FoldedCallers {
 public:
  using ViewNode = uint32_t;
  static constexpr ViewNode kRootNode = 0;

  FoldedCallers(const analysis::ProfileTree& tree,
                const analysis::BottomUpTree& callers, Folding folding);

  // The callers of node, in the order of the bottom-up tree.
  const std::vector<ViewNode>& Children(ViewNode node);

  const analysis::Frame& frame(ViewNode node) const;
  double Value(ViewNode node) const { return nodes_[node].value; }
  double Calls(ViewNode node) const { return nodes_[node].calls; }

 private:
  struct Node {
    analysis::FrameId frame = 0;
    std::vector<uint32_t> sources;  // bottom-up nodes merged here
    double value = 0;
    double calls = 0;
    bool expanded = false;
    std::vector<ViewNode> children;
  };

  ViewNode MakeNode(const std::vector<uint32_t>& sources);
  bool Hidden(uint32_t caller) const;

  const analysis::ProfileTree& tree_;
  const analysis::BottomUpTree& callers_;
  Folding folding_;
  std::vector<Node> nodes_;
};

}  // namespace deepcontext::report
