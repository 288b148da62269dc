#include "runtime/gpu/context_sink.h"

namespace deepcontext::gpu {

const GpuMetricInfo& MetricInfo(GpuMetric metric) {
  static const GpuMetricInfo kInfos[] = {
      {"gpu_time", "ns", "time the GPU spent running the kernel, copy or memset"},
      {"sync_time", "ns", "time spent waiting in a GPU synchronization"},
      {"bytes", "B", "bytes copied or set"},
      {"blocks", "", "thread blocks per kernel launch (grid size)"},
      {"threads_per_block", "", "threads per block (block size)"},
      {"threads_launched", "", "threads per kernel launch (blocks x block size)"},
      {"registers_per_thread", "", "registers allocated per thread"},
      {"shared_memory_bytes", "B", "static plus dynamic shared memory per block"},
      {"occupancy", "", "theoretical occupancy: resident warps / maximum warps per SM"},
      {"gpu_untimed_launches", "",
       "kernel launches the GPU tracer gave no duration, left out of gpu_time (with "
       "--gpu-metrics: the measured launches, which run replayed once per counter pass)"},
  };
  static_assert(sizeof(kInfos) / sizeof(kInfos[0]) ==
                static_cast<size_t>(GpuMetric::kCount));
  const auto index = static_cast<size_t>(metric);
  return kInfos[index < static_cast<size_t>(GpuMetric::kCount) ? index : 0];
}

}  // namespace deepcontext::gpu
