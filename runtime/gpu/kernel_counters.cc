#include "runtime/gpu/kernel_counters.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace deepcontext::gpu {
namespace {

constexpr KernelCounterInfo kInfos[kKernelCounterCount] = {
    {"gpu_occupancy_achieved", "fraction",
     "Achieved occupancy: warps active on an SM over the most it holds, 0..1, "
     "measured (--gpu-metrics; compare the theoretical gpu_occupancy)"},
    {"gpu_sm_throughput_pct", "percent",
     "SM throughput: the busiest SM unit's share of its peak sustained rate "
     "while the kernel ran (--gpu-metrics)"},
    {"gpu_dram_throughput_pct", "percent",
     "DRAM throughput: device memory bandwidth used, as a share of its peak "
     "sustained rate while the kernel ran (--gpu-metrics)"},
    {"gpu_tensor_pipe_pct", "percent",
     "Tensor pipe utilization: share of cycles the tensor cores were active "
     "(--gpu-metrics; where the chip exposes it)"},
};

}  // namespace

const KernelCounterInfo& CounterInfo(KernelCounter counter) {
  return kInfos[static_cast<size_t>(counter)];
}

KernelCounterRecorder::KernelCounterRecorder(ContextSink& sink,
                                             uint32_t launches_per_kernel)
    : sink_(sink), limit_(launches_per_kernel) {
  for (size_t i = 0; i < kKernelCounterCount; ++i) {
    metric_ids_[i] = sink_.RegisterNamedMetric(kInfos[i].name, kInfos[i].unit,
                                               kInfos[i].description);
  }
}

bool KernelCounterRecorder::ShouldMeasure(ContextId context, const void* kernel) {
  std::lock_guard<std::mutex> guard(mutex_);
  uint32_t& launches = launches_[{context, kernel}];
  if (launches >= limit_) {
    ++stats_.over_limit;
    return false;
  }
  if (launches == 0) ++stats_.kernels;
  ++launches;
  return true;
}

void KernelCounterRecorder::Release(ContextId context, const void* kernel) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto found = launches_.find({context, kernel});
  if (found == launches_.end() || found->second == 0) return;
  if (--found->second == 0) {
    launches_.erase(found);
    --stats_.kernels;
  }
}

void KernelCounterRecorder::Record(ContextId context, std::string_view api_name,
                                   std::string_view kernel_name,
                                   const KernelCounterValues& values) {
  const ContextId api = sink_.Child(context, GpuNodeKind::kApi, api_name);
  const ContextId node = api == 0 ? 0 : sink_.Child(api, GpuNodeKind::kKernel, kernel_name);
  std::lock_guard<std::mutex> guard(mutex_);
  if (node == 0) {
    ++stats_.failed;
    return;
  }
  ++stats_.measured;
  for (size_t i = 0; i < kKernelCounterCount; ++i) {
    if (metric_ids_[i] >= 0 && !std::isnan(values[i])) {
      sink_.AddNamed(node, metric_ids_[i], values[i]);
    }
  }
}

void KernelCounterRecorder::RecordFailure() {
  std::lock_guard<std::mutex> guard(mutex_);
  ++stats_.failed;
}

KernelCounterStats KernelCounterRecorder::Stats() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return stats_;
}

uint32_t KernelCounterLimitFromText(const char* text, std::string* warning) {
  if (text == nullptr || text[0] == '\0') return kDefaultLaunchesPerKernel;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (errno == 0 && end != text && *end == '\0' && value >= 1 && value <= 1000000) {
    return static_cast<uint32_t>(value);
  }
  *warning = std::string("DEEPCONTEXT_GPU_METRICS_KERNELS=") + text +
             " is not a whole number from 1 to 1000000; " +
             std::to_string(kDefaultLaunchesPerKernel) +
             " launches per kernel and calling context are measured";
  return kDefaultLaunchesPerKernel;
}

std::vector<std::pair<std::string, std::string>> KernelCounterMetadata(
    const KernelCounterStats& stats, uint32_t launches_per_kernel,
    const std::string& status, const std::string& warning) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("gpu_metrics", status);
  if (status.starts_with("off")) {
    out.emplace_back("warning_gpu_metrics", "GPU hardware counters " + status);
  }
  out.emplace_back("gpu_metrics_launches_per_kernel", std::to_string(launches_per_kernel));
  out.emplace_back("gpu_metrics_measured", std::to_string(stats.measured));
  out.emplace_back("gpu_metrics_kernels", std::to_string(stats.kernels));
  if (stats.over_limit > 0) {
    out.emplace_back("gpu_metrics_unmeasured", std::to_string(stats.over_limit));
  }
  if (stats.failed > 0) out.emplace_back("gpu_metrics_failed", std::to_string(stats.failed));
  if (!warning.empty()) out.emplace_back("warning_gpu_metrics_kernels", warning);
  return out;
}

}  // namespace deepcontext::gpu
