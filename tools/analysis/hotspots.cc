#include "tools/analysis/hotspots.h"

#include <algorithm>
#include <unordered_map>

namespace deepcontext::analysis {

namespace {

// For every node, the closest proper ancestor that is a Python frame, or
// kNoNode. One pass suffices because parents precede their children.
constexpr NodeIndex kNoNode = UINT32_MAX;

std::vector<NodeIndex> PythonAncestors(const ProfileTree& tree) {
  std::vector<NodeIndex> ancestors(tree.size(), kNoNode);
  for (NodeIndex i = 1; i < tree.size(); ++i) {
    NodeIndex parent = tree.node(i).parent;
    bool parent_is_python =
        tree.frame_of(parent).kind == format::FrameKind::kPythonFrame;
    ancestors[i] = parent_is_python ? parent : ancestors[parent];
  }
  return ancestors;
}

}  // namespace

std::vector<Hotspot> Hotspots(const ProfileTree& tree, MetricIndex metric,
                              size_t n,
                              std::optional<MetricIndex> calls_metric) {
  std::vector<Hotspot> by_frame(tree.frames().size());
  // Per hotspot frame: exclusive value reached through each Python caller.
  std::vector<std::unordered_map<FrameId, double>> callers(
      tree.frames().size());
  std::vector<NodeIndex> python_ancestors = PythonAncestors(tree);
  for (NodeIndex i = 0; i < tree.size(); ++i) {
    const Frame& frame = tree.frame_of(i);
    if (IsStructuralKind(frame.kind)) continue;
    double value = tree.Exclusive(i, metric);
    Hotspot& spot = by_frame[tree.node(i).frame];
    spot.frame = tree.node(i).frame;
    spot.exclusive += value;
    if (calls_metric) spot.calls += tree.Exclusive(i, *calls_metric);
    if (value == 0 || frame.kind == format::FrameKind::kPythonFrame) continue;
    if (NodeIndex caller = python_ancestors[i]; caller != kNoNode) {
      callers[spot.frame][tree.node(caller).frame] += value;
    }
  }

  std::vector<Hotspot> spots;
  for (FrameId f = 0; f < by_frame.size(); ++f) {
    Hotspot& spot = by_frame[f];
    if (spot.exclusive <= 0) continue;
    spot.frame = f;
    for (const auto& [caller, value] : callers[f]) {
      // Ties go to the smaller frame id so the result does not depend on
      // hash order.
      if (value > spot.python_caller_value ||
          (value == spot.python_caller_value && caller < spot.python_caller)) {
        spot.python_caller = caller;
        spot.python_caller_value = value;
      }
    }
    spots.push_back(spot);
  }
  std::stable_sort(spots.begin(), spots.end(),
                   [](const Hotspot& a, const Hotspot& b) {
                     return a.exclusive > b.exclusive;
                   });
  if (spots.size() > n) spots.resize(n);
  return spots;
}

}  // namespace deepcontext::analysis
