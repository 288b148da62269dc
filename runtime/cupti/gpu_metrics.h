// `deepcontext run --gpu-metrics` in the backend: hardware counters per
// kernel launch (achieved occupancy, SM, DRAM and tensor-pipe throughput)
// from CUPTI's range profiler, started when DEEPCONTEXT_GPU_METRICS=1, for at
// most DEEPCONTEXT_GPU_METRICS_KERNELS launches (default 5) per (calling
// context, kernel). GpuBackendState calls it at the API entry and exit of
// kernel launches, at stop, and adds its metadata.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/cupti/gpu_metrics_session.h"
#include "runtime/gpu/kernel_counters.h"

namespace deepcontext::cupti {

class CuptiLibrary;

class GpuMetrics {
 public:
  // nullptr when not asked for. When asked for but impossible (CUPTI
  // before 12.6), an object that measures nothing and says why in its
  // metadata.
  static std::unique_ptr<GpuMetrics> StartIfAsked(gpu::ContextSink& sink,
                                                  const CuptiLibrary& library);
  // The same with the entry points given (tests); `functions` null:
  // impossible, for the reason in `status`.
  GpuMetrics(gpu::ContextSink& sink, const GpuMetricsFunctions* functions,
             uint32_t launches_per_kernel, std::string status,
             std::function<std::string(int)> result_text);
  ~GpuMetrics();

  // How a context's GPU is claimed before measuring there
  // (counter_claims.h). [before the first launch]
  void SetClaimDevice(gpu::ClaimDevice claim) {
    if (session_ != nullptr) session_->SetClaimDevice(std::move(claim));
  }
  // A driver call's API entry, with CUPTI's callback id and parameters:
  // kernel launches (cuLaunchKernel, ...Ex, ...CooperativeKernel) within
  // the bound start a measurement; `api_name` names the API node, as for
  // the launch's activity record. [application threads]
  void OnApiEnter(uint32_t callback_id, const void* params, uint32_t correlation_id,
                  gpu::ContextId context, std::string_view api_name, void* cuda_context);
  // The same call's API exit: the measurement's values onto the kernel node.
  void OnApiExit(uint32_t correlation_id);
  void Stop();
  std::vector<std::pair<std::string, std::string>> Metadata() const;
  gpu::KernelCounterStats Stats() const { return recorder_.Stats(); }

 private:
  std::unique_ptr<GpuMetricsFunctions> owned_functions_;
  const GpuMetricsFunctions* functions_ = nullptr;
  gpu::KernelCounterRecorder recorder_;
  std::unique_ptr<RangeProfilerSession> session_;  // null when impossible
  std::string status_;  // why not, when session_ is null
  std::string warning_;
  // DEEPCONTEXT_GPU_METRICS_RECORD: CUPTI's values per measured launch are
  // appended there ("value <kernel> <metric> <value>"), the fixture format
  // of the CPU tests; null when not asked.
  FILE* record_ = nullptr;
};

}  // namespace deepcontext::cupti
