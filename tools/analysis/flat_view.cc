#include "tools/analysis/flat_view.h"

#include <algorithm>

namespace deepcontext::analysis {

std::vector<FlatEntry> Flat(const ProfileTree& tree, MetricIndex metric,
                            std::optional<MetricIndex> calls_metric) {
  std::vector<FlatEntry> by_frame(tree.frames().size());
  for (FrameId f = 0; f < by_frame.size(); ++f) by_frame[f].frame = f;

  // Depth-first walk keeping how often each frame is on the current path:
  // a node adds its inclusive value only when its frame is not already an
  // ancestor, which is what keeps recursion from double counting.
  std::vector<uint32_t> on_path(tree.frames().size(), 0);
  struct Visit {
    NodeIndex node;
    bool leaving;
  };
  std::vector<Visit> stack{{ProfileTree::kRootNode, false}};
  while (!stack.empty()) {
    Visit visit = stack.back();
    stack.pop_back();
    FrameId frame = tree.node(visit.node).frame;
    if (visit.leaving) {
      --on_path[frame];
      continue;
    }
    FlatEntry& entry = by_frame[frame];
    entry.exclusive += tree.Exclusive(visit.node, metric);
    if (on_path[frame] == 0)
      entry.inclusive += tree.Inclusive(visit.node, metric);
    if (calls_metric) entry.calls += tree.Exclusive(visit.node, *calls_metric);
    ++entry.nodes;
    ++on_path[frame];
    stack.push_back({visit.node, true});
    for (NodeIndex child : tree.node(visit.node).children) {
      stack.push_back({child, false});
    }
  }

  FrameId root_frame = tree.node(ProfileTree::kRootNode).frame;
  std::vector<FlatEntry> rows;
  for (const FlatEntry& entry : by_frame) {
    if (entry.nodes > 0 && entry.frame != root_frame) rows.push_back(entry);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const FlatEntry& a, const FlatEntry& b) {
                     if (a.exclusive != b.exclusive) {
                       return a.exclusive > b.exclusive;
                     }
                     return a.inclusive > b.inclusive;
                   });
  return rows;
}

}  // namespace deepcontext::analysis
