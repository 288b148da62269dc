#include "tools/analysis/metric_selection.h"

namespace deepcontext::analysis {

std::optional<MetricIndex> DefaultMetric(const ProfileTree& tree) {
  if (tree.metrics().empty()) return std::nullopt;
  std::optional<MetricIndex> gpu = tree.FindMetric("gpu_time");
  if (gpu && tree.Total(*gpu) != 0) return gpu;
  std::optional<MetricIndex> cpu = tree.FindMetric("cpu_time");
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

MetricLookup ResolveMetric(const ProfileTree& tree, std::string_view name) {
  MetricLookup result;
  std::optional<MetricIndex> metric =
      name.empty() ? DefaultMetric(tree) : tree.FindMetric(name);
  if (metric) {
    result.ok = true;
    result.metric = *metric;
  } else if (name.empty()) {
    result.error = "the profile contains no metrics";
  } else {
    result.error = "unknown metric '" + std::string(name) +
                   "'; available metrics: " + AvailableMetrics(tree);
  }
  return result;
}

}  // namespace deepcontext::analysis
