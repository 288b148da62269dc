// Hardware counters per kernel launch (`deepcontext run --gpu-metrics`),
// without vendor headers: the metrics a backend measures for a launch, the
// bound on launches measured per (calling context, kernel), and their
// recording on the kernel node:
//
//   launch context -> [GPU API] -> [kernel]
//                                   gpu_occupancy_achieved, gpu_sm_throughput_pct,
//                                   gpu_dram_throughput_pct, gpu_tensor_pipe_pct
//
// One sample per measured launch, so a node's mean (sum / count) is the mean
// over its measured launches. Measuring replays a kernel once per counter
// pass, so the bound keeps the cost of a long run that of its first launches.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/gpu/context_sink.h"

namespace deepcontext::gpu {

enum class KernelCounter : int {
  kAchievedOccupancy = 0,  // warps active / the SM's maximum, 0..1
  kSmThroughput = 1,       // % of the SMs' peak sustained throughput
  kDramThroughput = 2,     // % of DRAM's peak sustained throughput
  kTensorPipe = 3,         // % of cycles the tensor pipe was active
  kCount = 4,
};
inline constexpr size_t kKernelCounterCount = static_cast<size_t>(KernelCounter::kCount);

struct KernelCounterInfo {
  std::string_view name;  // the profile's metric name
  std::string_view unit;
  std::string_view description;
};
const KernelCounterInfo& CounterInfo(KernelCounter counter);

// One launch's values, indexed by KernelCounter; NaN where not measured
// (the chip lacks the counter).
using KernelCounterValues = std::array<double, kKernelCounterCount>;
inline KernelCounterValues NoCounterValues() {
  KernelCounterValues values;
  values.fill(std::numeric_limits<double>::quiet_NaN());
  return values;
}

struct KernelCounterStats {
  uint64_t measured = 0;        // launches whose values were recorded
  uint64_t over_limit = 0;      // launches left unmeasured by the bound
  uint64_t failed = 0;          // measurements the backend could not finish
  uint64_t kernels = 0;         // distinct (context, kernel) measured
};

class KernelCounterRecorder {
 public:
  // At most `launches_per_kernel` launches are measured per (calling
  // context, kernel); 0 measures none.
  KernelCounterRecorder(ContextSink& sink, uint32_t launches_per_kernel);

  uint32_t launches_per_kernel() const { return limit_; }
  // Whether this launch of `kernel` (the backend's handle of the kernel)
  // from `context` is to be measured; counts it when so. [application threads]
  bool ShouldMeasure(ContextId context, const void* kernel);
  // Gives back what ShouldMeasure counted, for a launch that turned out to
  // run nothing (captured into a graph).
  void Release(ContextId context, const void* kernel);
  // The values of a measured launch, onto its kernel node.
  void Record(ContextId context, std::string_view api_name,
              std::string_view kernel_name, const KernelCounterValues& values);
  // A measurement that ShouldMeasure allowed and the backend could not finish.
  void RecordFailure();

  KernelCounterStats Stats() const;

 private:
  ContextSink& sink_;
  const uint32_t limit_;
  mutable std::mutex mutex_;
  std::map<std::pair<ContextId, const void*>, uint32_t> launches_;
  std::array<int, kKernelCounterCount> metric_ids_{};
  KernelCounterStats stats_;
};

// The `launches_per_kernel` of DEEPCONTEXT_GPU_METRICS_KERNELS (default 5;
// a whole number 1..1000000); *warning when the text is bad.
uint32_t KernelCounterLimitFromText(const char* text, std::string* warning);
inline constexpr uint32_t kDefaultLaunchesPerKernel = 5;

// Metadata pairs describing the measurement ("gpu_metrics", ...). `status`
// is the backend's ("on (...)" or "off: <why>"); `cost` its one-line cost.
std::vector<std::pair<std::string, std::string>> KernelCounterMetadata(
    const KernelCounterStats& stats, uint32_t launches_per_kernel,
    const std::string& status, const std::string& warning);

}  // namespace deepcontext::gpu
