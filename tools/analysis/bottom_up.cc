#include "tools/analysis/bottom_up.h"

#include <algorithm>
#include <unordered_map>

namespace deepcontext::analysis {

BottomUpTree BottomUpTree::Build(const ProfileTree& tree, MetricIndex metric,
                                 std::optional<MetricIndex> calls_metric) {
  BottomUpTree result;
  result.nodes_.push_back(CallerNode{tree.node(ProfileTree::kRootNode).frame});
  std::unordered_map<uint64_t, uint32_t> child_ids;
  auto get_or_add = [&](uint32_t parent, FrameId frame) {
    uint64_t key = (static_cast<uint64_t>(parent) << 32) | frame;
    auto [it, inserted] =
        child_ids.emplace(key, static_cast<uint32_t>(result.nodes_.size()));
    if (inserted) {
      CallerNode node;
      node.frame = frame;
      node.parent = parent;
      result.nodes_.push_back(std::move(node));
      result.nodes_[parent].children.push_back(it->second);
    }
    return it->second;
  };

  for (NodeIndex n = 0; n < tree.size(); ++n) {
    double value = tree.Exclusive(n, metric);
    if (value == 0) continue;
    double calls = calls_metric ? tree.Exclusive(n, *calls_metric) : 0;
    result.nodes_[kRootNode].value += value;
    result.nodes_[kRootNode].calls += calls;
    // Each caller path is weighted by the exclusive value of the frame it
    // ends in; the tree root itself is not a caller anyone needs to see.
    uint32_t view = get_or_add(kRootNode, tree.node(n).frame);
    NodeIndex current = n;
    while (true) {
      result.nodes_[view].value += value;
      result.nodes_[view].calls += calls;
      if (current == ProfileTree::kRootNode) break;
      current = tree.node(current).parent;
      if (current == ProfileTree::kRootNode) break;
      view = get_or_add(view, tree.node(current).frame);
    }
  }

  for (CallerNode& node : result.nodes_) {
    std::stable_sort(node.children.begin(), node.children.end(),
                     [&result](uint32_t a, uint32_t b) {
                       return result.nodes_[a].value > result.nodes_[b].value;
                     });
  }
  return result;
}

}  // namespace deepcontext::analysis
