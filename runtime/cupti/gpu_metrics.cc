#include "runtime/cupti/gpu_metrics.h"

#include <cstdlib>
#include <cstring>

#include "runtime/cupti/cupti_loader.h"
#include "runtime/cupti/gpu_metrics_functions.h"

namespace deepcontext::cupti {
namespace {

// The kernel and stream of a launch, from its CUPTI parameters; false for
// driver calls that launch no single kernel.
bool LaunchTarget(uint32_t callback_id, const void* params, CUfunction* function,
                  CUstream* stream) {
  if (params == nullptr) return false;
  switch (callback_id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const auto* p = static_cast<const cuLaunchKernel_params*>(params);
      *function = p->f;
      *stream = p->hStream;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      const auto* p = static_cast<const cuLaunchCooperativeKernel_params*>(params);
      *function = p->f;
      *stream = p->hStream;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto* p = static_cast<const cuLaunchKernelEx_params*>(params);
      *function = p->f;
      *stream = p->config != nullptr ? p->config->hStream : nullptr;
      return true;
    }
    default:
      return false;
  }
}

// The launch this thread is measuring, between its API entry and exit.
struct PendingLaunch {
  const GpuMetrics* owner = nullptr;
  uint32_t correlation_id = 0;
  gpu::ContextId context = 0;
  void* cuda_context = nullptr;
  std::string api;
  std::string kernel;
};
thread_local PendingLaunch t_pending;

}  // namespace

std::unique_ptr<GpuMetrics> GpuMetrics::StartIfAsked(gpu::ContextSink& sink,
                                                     const CuptiLibrary& library) {
  const char* flag = std::getenv("DEEPCONTEXT_GPU_METRICS");
  if (flag == nullptr || std::strcmp(flag, "1") != 0) return nullptr;
  std::string warning;
  const uint32_t limit =
      gpu::KernelCounterLimitFromText(std::getenv("DEEPCONTEXT_GPU_METRICS_KERNELS"), &warning);
  auto functions = std::make_unique<GpuMetricsFunctions>();
  const Status resolved = ResolveGpuMetricsFunctions(library.path(), functions.get());
  auto metrics = std::make_unique<GpuMetrics>(
      sink, resolved.ok() ? functions.get() : nullptr, limit,
      resolved.ok() ? "" : "off: " + resolved.message(),
      [&library](int result) { return library.ResultString(result); });
  if (resolved.ok()) metrics->owned_functions_ = std::move(functions);
  metrics->warning_ = warning;
  if (const char* record = std::getenv("DEEPCONTEXT_GPU_METRICS_RECORD");
      record != nullptr && record[0] != '\0') {
    metrics->record_ = std::fopen(record, "a");
  }
  return metrics;
}

GpuMetrics::GpuMetrics(gpu::ContextSink& sink, const GpuMetricsFunctions* functions,
                       uint32_t launches_per_kernel, std::string status,
                       std::function<std::string(int)> result_text)
    : functions_(functions), recorder_(sink, launches_per_kernel), status_(std::move(status)) {
  if (functions != nullptr) {
    session_ = std::make_unique<RangeProfilerSession>(*functions, std::move(result_text));
  }
}

GpuMetrics::~GpuMetrics() {
  if (t_pending.owner == this) t_pending = PendingLaunch{};
  if (record_ != nullptr) std::fclose(record_);
}

void GpuMetrics::OnApiEnter(uint32_t callback_id, const void* params,
                            uint32_t correlation_id, gpu::ContextId context,
                            std::string_view api_name, void* cuda_context) {
  if (session_ == nullptr || cuda_context == nullptr) return;
  CUfunction function = nullptr;
  CUstream stream = nullptr;
  if (!LaunchTarget(callback_id, params, &function, &stream) || function == nullptr) return;
  // The bound first: past it a launch costs this lookup only.
  if (!recorder_.ShouldMeasure(context, function)) return;
  // A launch captured into a graph runs nothing now: nothing to measure.
  if (functions_->stream_is_capturing != nullptr) {
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    if (functions_->stream_is_capturing(stream, &capture) == CUDA_SUCCESS &&
        capture != CU_STREAM_CAPTURE_STATUS_NONE) {
      recorder_.Release(context, function);
      return;
    }
  }
  // Without the kernel's name the values could not join its node.
  const char* name = nullptr;
  if (functions_->func_get_name == nullptr ||
      functions_->func_get_name(&name, function) != CUDA_SUCCESS) {
    name = nullptr;
    // A CUkernel handle in place of the CUfunction (allowed since CUDA 12).
    if (functions_->kernel_get_name == nullptr ||
        functions_->kernel_get_name(&name, reinterpret_cast<CUkernel>(function)) !=
            CUDA_SUCCESS) {
      name = nullptr;
    }
  }
  if (name == nullptr || !session_->Begin(cuda_context).ok()) {
    recorder_.RecordFailure();
    return;
  }
  t_pending = PendingLaunch{this, correlation_id, context, cuda_context,
                            std::string(api_name), name};
}

void GpuMetrics::OnApiExit(uint32_t correlation_id) {
  if (t_pending.owner != this || t_pending.correlation_id != correlation_id) return;
  PendingLaunch launch = std::move(t_pending);
  t_pending = PendingLaunch{};
  gpu::KernelCounterValues values;
  std::vector<std::pair<std::string, double>> raw;
  if (!session_->End(launch.cuda_context, &values, record_ != nullptr ? &raw : nullptr).ok()) {
    recorder_.RecordFailure();
    return;
  }
  for (const auto& [metric, value] : raw) {
    std::fprintf(record_, "value %s %s %.6g\n", launch.kernel.c_str(), metric.c_str(), value);
  }
  recorder_.Record(launch.context, launch.api, launch.kernel, values);
}

void GpuMetrics::Stop() {
  if (session_ != nullptr) session_->Stop();
}

std::vector<std::pair<std::string, std::string>> GpuMetrics::Metadata() const {
  std::string status = session_ != nullptr ? session_->StatusText() : status_;
  return gpu::KernelCounterMetadata(recorder_.Stats(), recorder_.launches_per_kernel(),
                                    status, warning_);
}

}  // namespace deepcontext::cupti
