// Choosing which metric a view shows.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "tools/analysis/profile_tree.h"

namespace deepcontext::analysis {

// Returns the metric to show when the user names none: "gpu_time" when it
// has a nonzero total (GPU work is what deep-learning users usually chase),
// else "wall_time" with samples when op CPU time was sampled (metadata
// op_cpu_time "sampled ..."), else "cpu_time" when it has samples, else
// the first metric with samples that is not "calls" (a call count says
// little about cost), else the same choices without requiring samples.
// Returns nullopt only when the tree has no metrics at all.
std::optional<MetricIndex> DefaultMetric(const ProfileTree& tree);

// Looks up a metric by name. An empty name selects DefaultMetric. On
// failure the error is one line that names the metric and lists the
// available ones, e.g. "unknown metric 'gpu'; available metrics: calls,
// cpu_time".
StatusOr<MetricIndex> ResolveMetric(const ProfileTree& tree,
                                    std::string_view name);

// Returns the metric names joined by ", ", or "(none)" when there are none.
std::string AvailableMetrics(const ProfileTree& tree);

}  // namespace deepcontext::analysis
