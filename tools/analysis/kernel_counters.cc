#include "tools/analysis/kernel_counters.h"

#include <algorithm>

namespace deepcontext::analysis {
namespace {

// Launches are counted by the metric every chip reports.
constexpr std::string_view kSmMetric = "gpu_sm_throughput_pct";

std::optional<double> Mean(const ProfileTree& tree, NodeIndex node,
                           const std::optional<MetricIndex>& metric) {
  if (!metric) return std::nullopt;
  const MetricStats stats = tree.stats(node, *metric);
  if (stats.count == 0) return std::nullopt;
  return stats.sum / static_cast<double>(stats.count);
}

}  // namespace

bool HasKernelCounters(const ProfileTree& tree) {
  const std::optional<MetricIndex> sm = tree.FindMetric(kSmMetric);
  if (!sm) return false;
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    if (tree.stats(n, *sm).count > 0) return true;
  }
  return false;
}

std::vector<KernelCounters> MeasuredKernels(const ProfileTree& tree) {
  std::vector<KernelCounters> out;
  const std::optional<MetricIndex> sm = tree.FindMetric(kSmMetric);
  if (!sm) return out;
  const std::optional<MetricIndex> occupancy = tree.FindMetric("gpu_occupancy_achieved");
  const std::optional<MetricIndex> dram = tree.FindMetric("gpu_dram_throughput_pct");
  const std::optional<MetricIndex> tensor = tree.FindMetric("gpu_tensor_pipe_pct");
  const std::optional<MetricIndex> gpu_time = tree.FindMetric("gpu_time");
  const std::optional<MetricIndex> untimed = tree.FindMetric("gpu_untimed_launches");
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    if (tree.frame_of(n).kind != format::FrameKind::kGpuKernel) continue;
    const MetricStats sm_stats = tree.stats(n, *sm);
    if (sm_stats.count == 0) continue;
    KernelCounters kernel;
    kernel.kernel = n;
    kernel.launches = sm_stats.count;
    kernel.gpu_time = gpu_time ? tree.Inclusive(n, *gpu_time) : 0;
    kernel.timed_launches = gpu_time ? tree.stats(n, *gpu_time).count : 0;
    kernel.untimed_launches = untimed ? tree.stats(n, *untimed).count : 0;
    kernel.sm_pct = sm_stats.sum / static_cast<double>(sm_stats.count);
    kernel.occupancy = Mean(tree, n, occupancy);
    kernel.dram_pct = Mean(tree, n, dram);
    kernel.tensor_pipe_pct = Mean(tree, n, tensor);
    out.push_back(kernel);
  }
  std::stable_sort(out.begin(), out.end(), [](const KernelCounters& a, const KernelCounters& b) {
    if (a.gpu_time != b.gpu_time) return a.gpu_time > b.gpu_time;
    return a.launches > b.launches;
  });
  return out;
}

}  // namespace deepcontext::analysis
