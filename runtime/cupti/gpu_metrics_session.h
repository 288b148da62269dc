// Hardware counters per kernel with CUPTI's range profiler (CUDA 12.6+), per
// CUDA context, in auto-range / kernel-replay mode:
//
//   first measured launch in a context: cuptiProfilerInitialize (once),
//     the chip's name and counter availability, a profiler host object with
//     the metrics the chip has (cuptiProfilerHostConfigAddMetrics, one at a
//     time), its config image, cuptiRangeProfilerEnable, a counter-data
//     image for one range, cuptiRangeProfilerSetConfig;
//   Begin() at the launch's API entry: cuptiRangeProfilerStart, so the
//     launch becomes one range, replayed once per counter pass inside the
//     launch call (its memory saved and restored between passes);
//   End() at the launch's API exit: cuptiRangeProfilerStop,
//     cuptiRangeProfilerDecodeData, the range's values
//     (cuptiProfilerHostEvaluateToGpuValues), and the counter-data image
//     initialized again for the next launch;
//   Stop(): cuptiRangeProfilerDisable and the host objects released.
//
// No vendor types in this header: CUDA contexts are passed as void*.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/gpu/counter_claims.h"
#include "runtime/gpu/kernel_counters.h"
#include "common/status.h"

namespace deepcontext::cupti {

struct GpuMetricsFunctions;  // gpu_metrics_functions.h

// A CUPTI metric and the counter it gives; several may give one counter
// (the tensor pipe is hmma on Ampere, gmma too on Hopper), whose value is
// then the largest.
struct CounterMetric {
  const char* cupti_name;
  gpu::KernelCounter counter;
};
// The default set, in the order tried.
const std::vector<CounterMetric>& DefaultCounterMetrics();

class RangeProfilerSession {
 public:
  // `functions` must outlive the session; `result_text` names CUPTI result
  // codes in messages.
  explicit RangeProfilerSession(const GpuMetricsFunctions& functions,
                                std::function<std::string(int)> result_text = nullptr);
  ~RangeProfilerSession();
  RangeProfilerSession(const RangeProfilerSession&) = delete;
  RangeProfilerSession& operator=(const RangeProfilerSession&) = delete;

  // Called before the range profiler is enabled in a context: an error
  // (another process samples or measures that GPU) leaves the context
  // unmeasured. Without it no claim is made. [before the first launch]
  void SetClaimDevice(gpu::ClaimDevice claim) { claims_.SetClaimDevice(std::move(claim)); }

  // At a kernel launch's API entry in `cuda_context`: enables the range
  // profiler there on first use and starts a range. An error when the
  // context cannot be measured (it is then never tried again) or a launch
  // in it is being measured already (from another thread). [application threads]
  Status Begin(void* cuda_context);
  // At the API exit of the launch Begin() started, on the same thread: its
  // values, and with `raw` CUPTI's metric values by name (to record
  // fixtures). An error when CUPTI did not give exactly one range.
  Status End(void* cuda_context, gpu::KernelCounterValues* values,
                  std::vector<std::pair<std::string, double>>* raw = nullptr);
  // Disables the profiler in every context; call once the GPU is idle.
  void Stop();

  // "on (auto range, kernel replay, N passes, M contexts; metrics ...)" or
  // "off: <why>" when no context could be enabled and one failed.
  std::string StatusText() const;
  // Whether enabling a context failed because the driver refuses counters
  // to this user (ERR_NVGPUCTRPERM).
  bool permission_denied() const;

 private:
  struct Context;
  Status EnableLocked(void* cuda_context, Context& context);
  Status Check(const char* call, int result) const;

  const GpuMetricsFunctions& f_;
  std::function<std::string(int)> result_text_;
  gpu::SessionClaims claims_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::unique_ptr<Context>> contexts_;
  Status last_error_;
  bool permission_denied_ = false;  // a context was refused its counters
  // Whether cuptiProfilerInitialize ran (it runs once, for the first context
  // enabled) and whether Stop() ended the session, after which Begin()
  // refuses. Stop() does not undo the initialization.
  enum class Phase { kNotInitialized, kProfilerInitialized, kStopped };
  Phase phase_ = Phase::kNotInitialized;
};

}  // namespace deepcontext::cupti
