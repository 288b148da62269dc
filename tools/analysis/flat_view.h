// The flat view: one row per distinct frame, wherever it occurs in the tree.
#pragma once

#include <optional>
#include <vector>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::analysis {

// One distinct frame with its totals over the whole tree.
struct FlatEntry {
  FrameId frame = 0;
  double exclusive = 0;  // sum of the frame's exclusive values
  // Sum of the subtrees rooted at the frame's outermost occurrences: a
  // recursive frame is not counted again inside itself.
  double inclusive = 0;
  double calls = 0;  // exclusive "calls" summed over the frame's nodes
  size_t nodes = 0;  // how many tree nodes carry this frame
};

// Computes the flat view of metric. calls_metric, when given, fills
// FlatEntry::calls. The root frame is left out. Rows are sorted by exclusive
// value, then inclusive value, both descending; ties keep frame order.
std::vector<FlatEntry> Flat(const ProfileTree& tree, MetricIndex metric,
                            std::optional<MetricIndex> calls_metric);

}  // namespace deepcontext::analysis
