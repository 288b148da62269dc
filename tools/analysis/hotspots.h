// The frames where most of a metric is spent.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::analysis {

// One hotspot: a distinct frame and where it is mostly called from.
struct Hotspot {
  FrameId frame = 0;
  double exclusive = 0;  // the frame's exclusive value over the whole tree
  double calls = 0;      // exclusive "calls" over the frame's nodes
  // The nearest enclosing Python frame that contributes most of the
  // exclusive value, i.e. the user's line that leads to this cost; kNoFrame
  // when the frame is itself Python code or has no Python ancestor.
  // Module-call wrappers and torch.compile's machinery (frame.h) are
  // looked through: the line past them (a generated kernel launch, the
  // user's call of a compiled module) is the caller.
  FrameId python_caller = kNoFrame;
  double python_caller_value = 0;  // exclusive value reached via that frame
};

// Returns up to n distinct frames with the largest positive exclusive value
// of metric, largest first. Structural nodes (root, process, thread, phase)
// are never hotspots: their exclusive value is time outside any known code.
std::vector<Hotspot> Hotspots(
    const ProfileTree& tree, MetricIndex metric, size_t n,
    std::optional<MetricIndex> calls_metric = std::nullopt);

}  // namespace deepcontext::analysis
