#include "tools/analysis/hotspots.h"

#include <algorithm>
#include <unordered_map>

namespace deepcontext::analysis {

namespace {

// For every node, the closest proper ancestor that is a Python frame of
// code a user reads (not a module-call wrapper or torch.compile's
// machinery), or kNoNode. One pass suffices because parents precede their
// children.
constexpr NodeIndex kNoNode = UINT32_MAX;

std::vector<NodeIndex> PythonAncestors(const ProfileTree& tree) {
  std::vector<bool> caller_frame(tree.frames().size());
  for (FrameId f = 0; f < tree.frames().size(); ++f) {
    const Frame& frame = tree.frames()[f];
    caller_frame[f] = frame.kind == format::FrameKind::kPythonFrame &&
                      !IsFrameworkWrapper(frame) && !IsCompilerGlue(frame);
  }
  std::vector<NodeIndex> ancestors(tree.size(), kNoNode);
  for (NodeIndex i = 1; i < tree.size(); ++i) {
    NodeIndex parent = tree.node(i).parent;
    ancestors[i] = caller_frame[tree.node(parent).frame] ? parent : ancestors[parent];
  }
  return ancestors;
}

}  // namespace

std::vector<Hotspot> Hotspots(const ProfileTree& tree, MetricIndex metric,
                              size_t n,
                              std::optional<MetricIndex> calls_metric) {
  std::vector<Hotspot> by_frame(tree.frames().size());
  for (NodeIndex i = 0; i < tree.size(); ++i) {
    const FrameId f = tree.node(i).frame;
    if (IsStructuralKind(tree.frames()[f].kind)) continue;
    Hotspot& spot = by_frame[f];
    spot.frame = f;
    spot.exclusive += tree.Exclusive(i, metric);
    if (calls_metric) spot.calls += tree.Exclusive(i, *calls_metric);
  }
  std::vector<Hotspot> spots;
  for (FrameId f = 0; f < by_frame.size(); ++f) {
    if (by_frame[f].exclusive > 0) spots.push_back(by_frame[f]);
  }
  std::vector<Hotspot>().swap(by_frame);
  std::stable_sort(spots.begin(), spots.end(),
                   [](const Hotspot& a, const Hotspot& b) {
                     return a.exclusive > b.exclusive;
                   });
  if (spots.size() > n) spots.resize(n);

  // Callers are only needed for the frames that made the list, so a second
  // pass gathers them for those alone instead of a map per frame.
  constexpr uint32_t kNotListed = UINT32_MAX;
  std::vector<uint32_t> listed(tree.frames().size(), kNotListed);
  for (uint32_t k = 0; k < spots.size(); ++k) listed[spots[k].frame] = k;
  // Per listed frame: exclusive value reached through each Python caller.
  std::vector<std::unordered_map<FrameId, double>> callers(spots.size());
  std::vector<NodeIndex> python_ancestors = PythonAncestors(tree);
  for (NodeIndex i = 0; i < tree.size(); ++i) {
    const uint32_t k = listed[tree.node(i).frame];
    if (k == kNotListed) continue;
    if (tree.frame_of(i).kind == format::FrameKind::kPythonFrame) continue;
    const double value = tree.Exclusive(i, metric);
    if (value == 0) continue;
    if (NodeIndex caller = python_ancestors[i]; caller != kNoNode) {
      callers[k][tree.node(caller).frame] += value;
    }
  }
  for (uint32_t k = 0; k < spots.size(); ++k) {
    Hotspot& spot = spots[k];
    for (const auto& [caller, value] : callers[k]) {
      // Ties go to the smaller frame id so the result does not depend on
      // hash order.
      if (value > spot.python_caller_value ||
          (value == spot.python_caller_value && caller < spot.python_caller)) {
        spot.python_caller = caller;
        spot.python_caller_value = value;
      }
    }
  }
  return spots;
}

}  // namespace deepcontext::analysis
