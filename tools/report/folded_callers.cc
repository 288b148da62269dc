#include "tools/report/folded_callers.h"

#include <unordered_map>
#include <utility>

namespace deepcontext::report {

FoldedCallers::FoldedCallers(const analysis::ProfileTree& tree,
                             const analysis::BottomUpTree& callers,
                             Folding folding)
    : tree_(tree), callers_(callers), folding_(folding) {
  Node root;
  root.frame = callers.node(analysis::BottomUpTree::kRootNode).frame;
  root.sources.push_back(analysis::BottomUpTree::kRootNode);
  nodes_.push_back(std::move(root));
}

const analysis::Frame& FoldedCallers::frame(ViewNode node) const {
  return tree_.frames()[nodes_[node].frame];
}

bool FoldedCallers::Hidden(uint32_t caller) const {
  return IsFolded(tree_.frames()[callers_.node(caller).frame], folding_);
}

FoldedCallers::ViewNode FoldedCallers::MakeNode(
    const std::vector<uint32_t>& sources) {
  Node node;
  node.frame = callers_.node(sources.front()).frame;
  node.sources = sources;
  for (uint32_t source : sources) {
    node.value += callers_.node(source).value;
    node.calls += callers_.node(source).calls;
  }
  nodes_.push_back(std::move(node));
  return static_cast<ViewNode>(nodes_.size() - 1);
}

const std::vector<FoldedCallers::ViewNode>& FoldedCallers::Children(
    ViewNode node) {
  if (!nodes_[node].expanded) {
    const bool top_level = node == kRootNode;
    std::vector<std::vector<uint32_t>> groups;
    std::unordered_map<analysis::FrameId, size_t> group_of;
    // A hidden caller is replaced by its callers, through any chain of
    // hidden ones; at the top level a hidden frame is dropped instead (its
    // children are its callers, not frames of its own rank).
    std::vector<uint32_t> pending;
    for (auto it = nodes_[node].sources.rbegin();
         it != nodes_[node].sources.rend(); ++it) {
      const auto& children = callers_.node(*it).children;
      pending.insert(pending.end(), children.rbegin(), children.rend());
    }
    while (!pending.empty()) {
      uint32_t child = pending.back();
      pending.pop_back();
      if (Hidden(child)) {
        if (top_level) continue;
        const auto& callers = callers_.node(child).children;
        pending.insert(pending.end(), callers.rbegin(), callers.rend());
        continue;
      }
      analysis::FrameId frame = callers_.node(child).frame;
      auto [it, added] = group_of.emplace(frame, groups.size());
      if (added) groups.emplace_back();
      groups[it->second].push_back(child);
    }
    std::vector<ViewNode> children;
    children.reserve(groups.size());
    for (const auto& group : groups) children.push_back(MakeNode(group));
    nodes_[node].children = std::move(children);
    nodes_[node].expanded = true;
  }
  return nodes_[node].children;
}

}  // namespace deepcontext::report
