// Comparing two profiles of one program (before / after a change): every
// calling context matched by its path of frames, with each metric's value
// in both, ranked by how much it changed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tools/analysis/profile_tree.h"
#include "common/status.h"

namespace deepcontext::diff {

enum class ContextStatus { kChanged, kAdded, kRemoved };

// Returns "changed", "added" or "removed".
const char* StatusName(ContextStatus status);

// One metric of one context in both profiles (0 where it is absent).
struct MetricChange {
  double before_exclusive = 0;
  double after_exclusive = 0;
  double before_inclusive = 0;
  double after_inclusive = 0;

  double ExclusiveChange() const { return after_exclusive - before_exclusive; }
  double InclusiveChange() const { return after_inclusive - before_inclusive; }
};

// Change relative to before: (after - before) / before; nullopt when before
// is 0 (a context or value that is new).
std::optional<double> Relative(double before, double after);

// A calling context of either profile.
struct ContextDiff {
  std::optional<analysis::NodeIndex> before;  // node in the before tree
  std::optional<analysis::NodeIndex> after;   // node in the after tree
  ContextStatus status = ContextStatus::kChanged;
  std::vector<MetricChange> metrics;  // indexed like ProfileDiff::metrics
};

// A metric of either profile, with the indices it has in each tree. The
// per-rank companion metrics of merged profiles are left out.
struct DiffMetric {
  std::string name;
  std::string unit;
  std::optional<analysis::MetricIndex> before;
  std::optional<analysis::MetricIndex> after;
};

struct ProfileDiff {
  std::vector<DiffMetric> metrics;
  // Every context except the root, in tree order (parents first).
  std::vector<ContextDiff> contexts;
  // Totals per metric, indexed like metrics.
  std::vector<double> before_totals;
  std::vector<double> after_totals;

  // Returns the index of the metric called name.
  std::optional<size_t> FindMetric(const std::string& name) const;
};

// Matches the contexts of before and after. Thread frames match by name
// without their thread id, which differs between runs.
ProfileDiff DiffProfiles(const analysis::ProfileTree& before,
                         const analysis::ProfileTree& after);

// Indices into diff.contexts with a nonzero exclusive change of metric (or
// added / removed contexts with a value of it), largest absolute change
// first; at most n, all when n is 0.
std::vector<size_t> RankByChange(const ProfileDiff& diff, size_t metric,
                                 size_t n);

// The metric to rank by (an index into diff.metrics): the one called
// requested, else the report's default metric of after (of before when
// after has none). The error names an unknown metric and lists the
// available ones, like `deepcontext report --metric`.
StatusOr<size_t> ChooseRankMetric(const ProfileDiff& diff,
                                         const analysis::ProfileTree& before,
                                         const analysis::ProfileTree& after,
                                         const std::string& requested);

}  // namespace deepcontext::diff
