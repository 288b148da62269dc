#include "tools/report/folded_tree.h"

#include <unordered_map>
#include <utility>

namespace deepcontext::report {

bool IsFolded(const analysis::Frame& frame, Folding folding) {
  return folding == Folding::kDefault && (analysis::IsFrameworkWrapper(frame) ||
                                          analysis::IsCompilerGlue(frame) ||
                                          analysis::IsProfilerFrame(frame));
}

FoldedTree::FoldedTree(const analysis::ProfileTree& tree,
                       analysis::MetricIndex metric,
                       std::optional<analysis::MetricIndex> calls,
                       Folding folding)
    : tree_(tree), metric_(metric), calls_(calls), folding_(folding) {
  hidden_frames_.reserve(tree.frames().size());
  for (const analysis::Frame& frame : tree.frames()) {
    hidden_frames_.push_back(IsFolded(frame, folding));
  }
  hidden_frames_[tree.node(analysis::ProfileTree::kRootNode).frame] = false;
  MakeNode({analysis::ProfileTree::kRootNode});
}

const analysis::Frame& FoldedTree::frame(ViewNode node) const {
  return tree_.frames()[nodes_[node].frame];
}

FoldedTree::ViewNode FoldedTree::MakeNode(
    const std::vector<analysis::NodeIndex>& members) {
  Node node;
  node.frame = tree_.node(members.front()).frame;
  // Hidden descendants reached through hidden nodes only are folded in;
  // an explicit stack, since wrappers can nest as deep as the model.
  std::vector<analysis::NodeIndex> pending(members.begin(), members.end());
  while (!pending.empty()) {
    analysis::NodeIndex index = pending.back();
    pending.pop_back();
    node.sources.push_back(index);
    node.exclusive += tree_.Exclusive(index, metric_);
    if (calls_) node.calls += tree_.Exclusive(index, *calls_);
    for (analysis::NodeIndex child : tree_.node(index).children) {
      if (hidden_frames_[tree_.node(child).frame]) pending.push_back(child);
    }
  }
  for (analysis::NodeIndex member : members) {
    node.inclusive += tree_.Inclusive(member, metric_);
  }
  nodes_.push_back(std::move(node));
  return static_cast<ViewNode>(nodes_.size() - 1);
}

const std::vector<FoldedTree::ViewNode>& FoldedTree::Children(ViewNode node) {
  if (!nodes_[node].expanded) {
    // Visible children of every source, grouped by frame in first-seen
    // order.
    std::vector<std::vector<analysis::NodeIndex>> groups;
    std::unordered_map<analysis::FrameId, size_t> group_of;
    for (analysis::NodeIndex source : nodes_[node].sources) {
      for (analysis::NodeIndex child : tree_.node(source).children) {
        analysis::FrameId frame = tree_.node(child).frame;
        if (hidden_frames_[frame]) continue;
        auto [it, added] = group_of.emplace(frame, groups.size());
        if (added) groups.emplace_back();
        groups[it->second].push_back(child);
      }
    }
    std::vector<ViewNode> children;
    children.reserve(groups.size());
    // MakeNode may reallocate nodes_: no reference into it is held here.
    for (const auto& group : groups) children.push_back(MakeNode(group));
    nodes_[node].children = std::move(children);
    nodes_[node].expanded = true;
  }
  return nodes_[node].children;
}

}  // namespace deepcontext::report
