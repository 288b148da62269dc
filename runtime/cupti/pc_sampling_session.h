// GPU instruction sampling with CUPTI's PC sampling API, per CUDA context:
//
//   first kernel launch in a context: cuptiPCSamplingGetNumStallReasons,
//     cuptiPCSamplingGetStallReasons, cuptiPCSamplingSetConfigurationAttribute
//     (kernel-serialized collection, every stall reason, parsed data, the
//     buffer for the data Disable hands over), cuptiPCSamplingEnable;
//   every kernel launch, Drain(), Stop(): cuptiPCSamplingGetData until
//     nothing remains (it never synchronizes: it hands over what is there);
//   Stop(): after the backend waited for the GPU, a last GetData, then
//     cuptiPCSamplingDisable, whose final data lands in the configured
//     buffer.
//
// Kernel-serialized collection tags each PC record with the correlation id
// of its launch, which PcSampleAggregator turns into the launch's calling
// context; its cost is that kernels of a context no longer overlap. This
// header has no vendor types: CUDA contexts are passed as void*.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/cupti/pc_sampling_aggregator.h"
#include "runtime/gpu/counter_claims.h"

namespace deepcontext::cupti {

struct PcSamplingFunctions;  // pc_sampling_functions.h

struct PcSamplingOptions {
  // log2 of the sampling period in cycles (5..31); 0: CUPTI's default,
  // which depends on the SM count.
  uint32_t period_log2 = 0;
  // PC records fetched per cuptiPCSamplingGetData call.
  size_t pcs_per_batch = 2048;
};

// Reads DEEPCONTEXT_GPU_SAMPLE_PERIOD (5..31); *warning when it is bad.
PcSamplingOptions PcSamplingOptionsFromEnvironment(std::string* warning);

class PcSamplingSession {
 public:
  // `functions` and `aggregator` must outlive the session. `result_text`
  // names CUPTI result codes in messages.
  PcSamplingSession(const PcSamplingFunctions& functions,
                    PcSampleAggregator& aggregator, PcSamplingOptions options,
                    std::function<std::string(int)> result_text = nullptr);
  ~PcSamplingSession();
  PcSamplingSession(const PcSamplingSession&) = delete;
  PcSamplingSession& operator=(const PcSamplingSession&) = delete;

  // Called before sampling is enabled in a context: an error (another
  // process samples or measures that GPU) leaves the context unsampled.
  // Without it no claim is made. [before the first launch]
  void SetClaimDevice(gpu::ClaimDevice claim) { claims_.SetClaimDevice(std::move(claim)); }

  // At a kernel launch's API entry in `cuda_context`: enables sampling
  // there on first use, then hands over the samples of kernels that
  // finished. [application threads]
  void OnKernelLaunch(void* cuda_context);
  // Hands over what CUPTI holds for every enabled context.
  void Drain();
  // Last data and disable, in every context; call once the GPU is idle.
  void Stop();

  // "on (kernel-serialized, every stall reason, N contexts)" or
  // "off: <why>" when no context could be enabled and one failed.
  std::string Status() const;

 private:
  struct Context;
  bool EnableLocked(void* cuda_context, Context& context);
  void DrainLocked(Context& context);
  std::string Describe(const char* call, int result) const;

  const PcSamplingFunctions& f_;
  PcSampleAggregator& aggregator_;
  const PcSamplingOptions options_;
  std::function<std::string(int)> result_text_;
  gpu::SessionClaims claims_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::unique_ptr<Context>> contexts_;
  std::string last_error_;
  bool stopped_ = false;
};

}  // namespace deepcontext::cupti
