#include "tools/analysis/metric_selection.h"

#include <algorithm>

namespace deepcontext::analysis {

std::optional<MetricIndex> DefaultMetric(const ProfileTree& tree) {
  if (tree.metrics().empty()) return std::nullopt;
  std::optional<MetricIndex> gpu = tree.FindMetric("gpu_time");
  if (gpu && tree.Total(*gpu) != 0) return gpu;
  std::optional<MetricIndex> cpu = tree.FindMetric("cpu_time");
  // Sampled CPU time is an estimate that short ops often miss; their wall
  // time is measured exactly.
  const bool sampled_cpu = std::ranges::any_of(
      tree.sources(), [](const SourceInfo& source) {
        return source.Metadata("op_cpu_time").starts_with("sampled");
      });
  if (sampled_cpu) {
    std::optional<MetricIndex> wall = tree.FindMetric("wall_time");
    if (wall && tree.HasSamples(*wall)) return wall;
  }
  if (cpu && tree.HasSamples(*cpu)) return cpu;
  for (MetricIndex i = 0; i < tree.metrics().size(); ++i) {
    if (tree.metrics()[i].name != "calls" && tree.HasSamples(i)) return i;
  }
  if (cpu) return cpu;
  for (MetricIndex i = 0; i < tree.metrics().size(); ++i) {
    if (tree.metrics()[i].name != "calls") return i;
  }
  return 0;
}

std::string AvailableMetrics(const ProfileTree& tree) {
  if (tree.metrics().empty()) return "(none)";
  std::string names;
  for (const MetricInfo& metric : tree.metrics()) {
    if (!names.empty()) names += ", ";
    names += metric.name;
  }
  return names;
}

StatusOr<MetricIndex> ResolveMetric(const ProfileTree& tree,
                                    std::string_view name) {
  std::optional<MetricIndex> metric =
      name.empty() ? DefaultMetric(tree) : tree.FindMetric(name);
  if (metric) return *metric;
  if (name.empty()) return Status::Error("the profile contains no metrics");
  return Status::Error("unknown metric '" + std::string(name) +
                       "'; available metrics: " + AvailableMetrics(tree));
}

}  // namespace deepcontext::analysis
