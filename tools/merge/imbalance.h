// The imbalance view of a merged multi-rank profile: the contexts whose
// value differs most between ranks, with the slowest rank and the Python
// line that leads there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::merge {

// One context's distribution of an exclusive metric across ranks.
struct ImbalancedContext {
  analysis::NodeIndex node = 0;
  double min = 0;     // smallest per-rank value (0 when a rank lacks it)
  double median = 0;  // median per-rank value
  double max = 0;     // the slowest rank's value
  long long slowest_rank = 0;
  uint64_t ranks_with_context = 0;
  // The nearest Python frame at or above the node (the user's line), or
  // nullopt when there is none.
  std::optional<analysis::NodeIndex> python_line;

  // How much longer the slowest rank spent than the typical rank.
  double Excess() const { return max - median; }
};

struct ImbalanceView {
  size_t ranks = 0;  // ranks in the job
  std::vector<ImbalancedContext> contexts;  // largest Excess() first
};

// True when tree is a merged profile holding per-rank distributions.
bool IsMergedProfile(const analysis::ProfileTree& tree);

// Returns up to n contexts with the largest positive excess of metric (a
// base metric such as wall_time), or nullopt when the tree is not a merged
// profile or holds no distribution of that metric.
std::optional<ImbalanceView> FindImbalance(const analysis::ProfileTree& tree,
                                           analysis::MetricIndex metric,
                                           size_t n);

}  // namespace deepcontext::merge
