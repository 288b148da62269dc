#include "runtime/cupti/gpu_metrics_session.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "runtime/cupti/cupti_failure_text.h"
#include "runtime/cupti/gpu_metrics_functions.h"

namespace deepcontext::cupti {

using gpu::KernelCounter;

const std::vector<CounterMetric>& DefaultCounterMetrics() {
  static const auto* metrics = new std::vector<CounterMetric>{
      {"sm__warps_active.avg.pct_of_peak_sustained_active",
       KernelCounter::kAchievedOccupancy},
      {"sm__throughput.avg.pct_of_peak_sustained_elapsed", KernelCounter::kSmThroughput},
      {"dram__throughput.avg.pct_of_peak_sustained_elapsed",
       KernelCounter::kDramThroughput},
      {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
       KernelCounter::kTensorPipe},
      {"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
       KernelCounter::kTensorPipe},
  };
  return *metrics;
}

// One CUDA context's range profiler and images.
struct RangeProfilerSession::Context {
  enum class State {
    kEnabling,   // EnableLocked under way
    kReady,      // the next launch may be measured
    kMeasuring,  // between Begin() and End()
    kFailed,     // enabling failed: never measured
    kBroken,     // the counter-data image could not be reset: no more launches
    kDisabled,   // Stop() disabled it
  };
  CUcontext ctx = nullptr;
  State state = State::kEnabling;
  std::unique_ptr<gpu::CounterClaim> claim;  // held until Stop()
  CUpti_Profiler_Host_Object* host = nullptr;
  CUpti_RangeProfiler_Object* profiler = nullptr;
  std::string chip;
  size_t passes = 0;
  std::vector<const char*> metric_names;  // those the chip has
  std::vector<KernelCounter> metric_counters;
  std::vector<uint8_t> config;
  std::vector<uint8_t> counter_data;
  std::vector<double> scratch;
};

Status ResolveGpuMetricsFunctions(const std::string& library_path,
                                       GpuMetricsFunctions* functions) {
  // CUPTI loads libnvperf_host.so by name; one already loaded under that
  // name is used, so the copies beside libcupti are loaded first.
  const size_t slash = library_path.rfind('/');
  if (slash != std::string::npos) {
    const std::string folder = library_path.substr(0, slash + 1);
    for (const char* name : {"libnvperf_host.so", "libnvperf_target.so"}) {
      dlopen((folder + name).c_str(), RTLD_NOW | RTLD_GLOBAL);  // kept loaded
    }
  }
  void* handle = dlopen(library_path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return Status::Error("libcupti is not loaded");
  std::string missing;
  auto resolve = [&](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(handle, name));
    if (slot == nullptr && missing.empty()) missing = name;
  };
  resolve(functions->profiler_initialize, "cuptiProfilerInitialize");
  resolve(functions->get_device_id, "cuptiGetDeviceId");
  resolve(functions->get_chip_name, "cuptiDeviceGetChipName");
  resolve(functions->get_counter_availability, "cuptiProfilerGetCounterAvailability");
  resolve(functions->host_initialize, "cuptiProfilerHostInitialize");
  resolve(functions->host_deinitialize, "cuptiProfilerHostDeinitialize");
  resolve(functions->host_add_metrics, "cuptiProfilerHostConfigAddMetrics");
  resolve(functions->host_config_image_size, "cuptiProfilerHostGetConfigImageSize");
  resolve(functions->host_config_image, "cuptiProfilerHostGetConfigImage");
  resolve(functions->host_passes, "cuptiProfilerHostGetNumOfPasses");
  resolve(functions->host_evaluate, "cuptiProfilerHostEvaluateToGpuValues");
  resolve(functions->enable, "cuptiRangeProfilerEnable");
  resolve(functions->disable, "cuptiRangeProfilerDisable");
  resolve(functions->set_config, "cuptiRangeProfilerSetConfig");
  resolve(functions->start, "cuptiRangeProfilerStart");
  resolve(functions->stop, "cuptiRangeProfilerStop");
  resolve(functions->decode, "cuptiRangeProfilerDecodeData");
  resolve(functions->counter_data_size, "cuptiRangeProfilerGetCounterDataSize");
  resolve(functions->counter_data_initialize, "cuptiRangeProfilerCounterDataImageInitialize");
  resolve(functions->counter_data_info, "cuptiRangeProfilerGetCounterDataInfo");
  dlclose(handle);  // the loader's own reference keeps it loaded
  if (!missing.empty()) {
    return Status::Error("libcupti has no " + missing + " (the range profiler needs CUPTI 12.6+)",
                         Status::Code::kUnsupported);
  }
  if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD); cuda != nullptr) {
    functions->func_get_name =
        reinterpret_cast<decltype(functions->func_get_name)>(dlsym(cuda, "cuFuncGetName"));
    functions->kernel_get_name =
        reinterpret_cast<decltype(functions->kernel_get_name)>(dlsym(cuda, "cuKernelGetName"));
    functions->stream_is_capturing = reinterpret_cast<decltype(functions->stream_is_capturing)>(
        dlsym(cuda, "cuStreamIsCapturing"));
    dlclose(cuda);
  }
  return Status::Ok();
}

RangeProfilerSession::RangeProfilerSession(const GpuMetricsFunctions& functions,
                                           std::function<std::string(int)> result_text)
    : f_(functions), result_text_(std::move(result_text)) {}

RangeProfilerSession::~RangeProfilerSession() = default;

Status RangeProfilerSession::Check(const char* call, int result) const {
  if (result == CUPTI_SUCCESS) return Status::Ok();
  const std::string text = DescribeCuptiFailure(call, result, result_text_);
  if (result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ||
      result == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES) {
    return Status::Error(
        "the GPU driver lets only administrators read performance counters "
        "(ERR_NVGPUCTRPERM, " + text + "); allow them with the nvidia module option "
        "NVreg_RestrictProfilingToAdminUsers=0 or run as root, see "
        "https://developer.nvidia.com/ERR_NVGPUCTRPERM",
        Status::Code::kPermissionDenied);
  }
  if (result == CUPTI_ERROR_NOT_SUPPORTED || result == CUPTI_ERROR_NOT_COMPATIBLE ||
      result == CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED ||
      result == CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED) {
    return Status::Error(text, Status::Code::kUnsupported);
  }
  return Status::Error(text);
}

Status RangeProfilerSession::EnableLocked(void* cuda_context, Context& context) {
  context.ctx = static_cast<CUcontext>(cuda_context);
  auto claim = claims_.Claim(cuda_context);
  if (!claim.ok()) return claim.status();
  context.claim = std::move(*claim);
  if (phase_ == Phase::kNotInitialized) {
    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    if (Status s = Check("cuptiProfilerInitialize", f_.profiler_initialize(&init)); !s.ok()) {
      return s;
    }
    phase_ = Phase::kProfilerInitialized;
  }
  uint32_t device = 0;
  if (Status s = Check("cuptiGetDeviceId", f_.get_device_id(context.ctx, &device)); !s.ok()) {
    return s;
  }
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = device;
  if (Status s = Check("cuptiDeviceGetChipName", f_.get_chip_name(&chip)); !s.ok()) return s;
  context.chip = chip.pChipName != nullptr ? chip.pChipName : "";

  // Availability first: it fails once a profiler is enabled on the context.
  CUpti_Profiler_GetCounterAvailability_Params availability{
      CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  availability.ctx = context.ctx;
  if (Status s = Check("cuptiProfilerGetCounterAvailability",
                       f_.get_counter_availability(&availability));
      !s.ok()) {
    return s;
  }
  std::vector<uint8_t> available(availability.counterAvailabilityImageSize);
  availability.pCounterAvailabilityImage = available.data();
  if (Status s = Check("cuptiProfilerGetCounterAvailability",
                       f_.get_counter_availability(&availability));
      !s.ok()) {
    return s;
  }

  auto new_host = [&]() -> Status {
    CUpti_Profiler_Host_Initialize_Params host{
        CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    host.pChipName = context.chip.c_str();
    host.pCounterAvailabilityImage = available.data();
    if (Status s = Check("cuptiProfilerHostInitialize", f_.host_initialize(&host)); !s.ok()) {
      return s;
    }
    context.host = host.pHostObject;
    return Status::Ok();
  };
  auto add_metric = [&](const char* name) {
    CUpti_Profiler_Host_ConfigAddMetrics_Params add{
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    add.pHostObject = context.host;
    add.ppMetricNames = &name;
    add.numMetrics = 1;
    return f_.host_add_metrics(&add) == CUPTI_SUCCESS;
  };
  if (Status s = new_host(); !s.ok()) return s;
  // One at a time: a metric this chip lacks (gmma: not a GH100 metric in
  // CUPTI 13.0) is left out instead of failing the set. A host object that
  // refused a metric refuses every later one (CUPTI_ERROR_UNKNOWN; CUPTI
  // 13.0's host API for GH100, bench/gpu_metrics_passes), so the next
  // metric after a refusal starts a new one with those taken so far.
  bool refused = false;
  for (const CounterMetric& metric : DefaultCounterMetrics()) {
    if (refused) {
      CUpti_Profiler_Host_Deinitialize_Params done{
          CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
      done.pHostObject = context.host;
      f_.host_deinitialize(&done);
      context.host = nullptr;
      if (Status s = new_host(); !s.ok()) return s;
      for (const char* taken : context.metric_names) {
        if (!add_metric(taken)) {
          return Status::Error(std::string("cuptiProfilerHostConfigAddMetrics refused ") + taken +
                               " on a new host object");
        }
      }
      refused = false;
    }
    if (add_metric(metric.cupti_name)) {
      context.metric_names.push_back(metric.cupti_name);
      context.metric_counters.push_back(metric.counter);
    } else {
      refused = true;
    }
  }
  if (context.metric_names.empty()) {
    return Status::Error("chip " + context.chip + " has none of the default metrics",
                         Status::Code::kUnsupported);
  }
  CUpti_Profiler_Host_GetConfigImageSize_Params size{
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = context.host;
  if (Status s = Check("cuptiProfilerHostGetConfigImageSize", f_.host_config_image_size(&size));
      !s.ok()) {
    return s;
  }
  context.config.assign(size.configImageSize, 0);
  CUpti_Profiler_Host_GetConfigImage_Params image{
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  image.pHostObject = context.host;
  image.configImageSize = context.config.size();
  image.pConfigImage = context.config.data();
  if (Status s = Check("cuptiProfilerHostGetConfigImage", f_.host_config_image(&image));
      !s.ok()) {
    return s;
  }
  CUpti_Profiler_Host_GetNumOfPasses_Params passes{
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  passes.configImageSize = context.config.size();
  passes.pConfigImage = context.config.data();
  if (f_.host_passes(&passes) == CUPTI_SUCCESS) context.passes = passes.numOfPasses;

  CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  enable.ctx = context.ctx;
  if (Status s = Check("cuptiRangeProfilerEnable", f_.enable(&enable)); !s.ok()) return s;
  context.profiler = enable.pRangeProfilerObject;
  // Enabled from here on: a failure below leaves Stop() to disable it.
  CUpti_RangeProfiler_GetCounterDataSize_Params data_size{
      CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  data_size.pRangeProfilerObject = context.profiler;
  data_size.pMetricNames = context.metric_names.data();
  data_size.numMetrics = context.metric_names.size();
  data_size.maxNumOfRanges = 1;  // one launch per Begin/End
  data_size.maxNumRangeTreeNodes = 1;
  if (Status s = Check("cuptiRangeProfilerGetCounterDataSize", f_.counter_data_size(&data_size));
      !s.ok()) {
    return s;
  }
  context.counter_data.assign(data_size.counterDataSize, 0);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params data{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  data.pRangeProfilerObject = context.profiler;
  data.counterDataSize = context.counter_data.size();
  data.pCounterData = context.counter_data.data();
  if (Status s = Check("cuptiRangeProfilerCounterDataImageInitialize",
                       f_.counter_data_initialize(&data));
      !s.ok()) {
    return s;
  }
  CUpti_RangeProfiler_SetConfig_Params config{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  config.pRangeProfilerObject = context.profiler;
  config.configSize = context.config.size();
  config.pConfig = context.config.data();
  config.counterDataImageSize = context.counter_data.size();
  config.pCounterDataImage = context.counter_data.data();
  config.range = CUPTI_AutoRange;
  config.replayMode = CUPTI_KernelReplay;
  config.maxRangesPerPass = 1;
  config.numNestingLevels = 1;
  config.minNestingLevel = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;
  if (Status s = Check("cuptiRangeProfilerSetConfig", f_.set_config(&config)); !s.ok()) return s;
  context.scratch.assign(context.metric_names.size(), 0.0);
  return Status::Ok();
}

Status RangeProfilerSession::Begin(void* cuda_context) {
  if (cuda_context == nullptr) return Status::Error("no CUDA context");
  std::lock_guard<std::mutex> guard(mutex_);
  if (phase_ == Phase::kStopped) return Status::Error("stopped");
  auto& slot = contexts_[cuda_context];
  if (slot == nullptr) {
    slot = std::make_unique<Context>();
    Status enabled = EnableLocked(cuda_context, *slot);
    slot->state = enabled.ok() ? Context::State::kReady : Context::State::kFailed;
    if (!enabled.ok()) {
      // Not enabled: nothing for Stop() to disable, so others may have the GPU.
      if (slot->profiler == nullptr) slot->claim.reset();
      last_error_ = enabled;
      permission_denied_ |= enabled.code() == Status::Code::kPermissionDenied;
      return enabled;
    }
  }
  Context& context = *slot;
  if (context.state == Context::State::kMeasuring) {
    return Status::Error("a launch of this context is being measured");
  }
  if (context.state != Context::State::kReady) return Status::Error("context not measured");
  CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  start.pRangeProfilerObject = context.profiler;
  if (Status s = Check("cuptiRangeProfilerStart", f_.start(&start)); !s.ok()) {
    last_error_ = s;
    return s;
  }
  context.state = Context::State::kMeasuring;
  return Status::Ok();
}

Status RangeProfilerSession::End(void* cuda_context, gpu::KernelCounterValues* values,
                                 std::vector<std::pair<std::string, double>>* raw) {
  *values = gpu::NoCounterValues();
  std::lock_guard<std::mutex> guard(mutex_);
  auto found = contexts_.find(cuda_context);
  if (found == contexts_.end() || found->second->state != Context::State::kMeasuring) {
    return Status::Error("no launch being measured");
  }
  Context& context = *found->second;
  context.state = Context::State::kReady;
  CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  stop.pRangeProfilerObject = context.profiler;
  Status status = Check("cuptiRangeProfilerStop", f_.stop(&stop));
  if (status.ok()) {
    CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    decode.pRangeProfilerObject = context.profiler;
    status = Check("cuptiRangeProfilerDecodeData", f_.decode(&decode));
  }
  CUpti_RangeProfiler_GetCounterDataInfo_Params info{
      CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = context.counter_data.data();
  info.counterDataImageSize = context.counter_data.size();
  if (status.ok()) {
    status = Check("cuptiRangeProfilerGetCounterDataInfo", f_.counter_data_info(&info));
  }
  // A launch of another thread in the same range, or none (a failed
  // launch): the values would not be this launch's.
  if (status.ok() && info.numTotalRanges != 1) {
    status = Status::Error("the range profiler gave " + std::to_string(info.numTotalRanges) +
                           " ranges for one launch");
  }
  if (status.ok()) {
    CUpti_Profiler_Host_EvaluateToGpuValues_Params evaluate{
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    evaluate.pHostObject = context.host;
    evaluate.pCounterDataImage = context.counter_data.data();
    evaluate.counterDataImageSize = context.counter_data.size();
    evaluate.rangeIndex = 0;
    evaluate.ppMetricNames = context.metric_names.data();
    evaluate.numMetrics = context.metric_names.size();
    evaluate.pMetricValues = context.scratch.data();
    status = Check("cuptiProfilerHostEvaluateToGpuValues", f_.host_evaluate(&evaluate));
  }
  if (status.ok()) {
    for (size_t i = 0; i < context.metric_names.size(); ++i) {
      double& slot = (*values)[static_cast<size_t>(context.metric_counters[i])];
      const double value = context.scratch[i];
      if (raw != nullptr) raw->emplace_back(context.metric_names[i], value);
      if (std::isnan(value)) continue;
      slot = std::isnan(slot) ? value : std::max(slot, value);
    }
    // Occupancy is a share of the peak: the profile keeps it as 0..1 like
    // the theoretical occupancy.
    double& occupancy = (*values)[static_cast<size_t>(KernelCounter::kAchievedOccupancy)];
    if (!std::isnan(occupancy)) occupancy /= 100.0;
  }
  // Ready for the next launch whatever happened to this one.
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params reset{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  reset.pRangeProfilerObject = context.profiler;
  reset.counterDataSize = context.counter_data.size();
  reset.pCounterData = context.counter_data.data();
  if (Status s = Check("cuptiRangeProfilerCounterDataImageInitialize",
                       f_.counter_data_initialize(&reset));
      !s.ok()) {
    context.state = Context::State::kBroken;  // the image is unusable
    if (status.ok()) status = s;
  }
  if (!status.ok()) last_error_ = status;
  return status;
}

void RangeProfilerSession::Stop() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (phase_ == Phase::kStopped) return;
  phase_ = Phase::kStopped;
  for (auto& [cuda_context, context] : contexts_) {
    if (context->profiler != nullptr) {
      if (context->state == Context::State::kMeasuring) {
        CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
        stop.pRangeProfilerObject = context->profiler;
        f_.stop(&stop);
      }
      CUpti_RangeProfiler_Disable_Params disable{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
      disable.pRangeProfilerObject = context->profiler;
      if (Status s = Check("cuptiRangeProfilerDisable", f_.disable(&disable)); !s.ok()) {
        last_error_ = s;
      }
      context->profiler = nullptr;
    }
    if (context->host != nullptr) {
      CUpti_Profiler_Host_Deinitialize_Params host{
          CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
      host.pHostObject = context->host;
      f_.host_deinitialize(&host);
      context->host = nullptr;
    }
    if (context->state != Context::State::kFailed) context->state = Context::State::kDisabled;
    context->claim.reset();
  }
}

std::string RangeProfilerSession::StatusText() const {
  std::lock_guard<std::mutex> guard(mutex_);
  size_t enabled = 0, failed = 0, passes = 0;
  std::string chip;
  std::vector<const char*> metrics;
  for (const auto& [cuda_context, context] : contexts_) {
    if (context->state == Context::State::kFailed) {
      ++failed;
      continue;
    }
    ++enabled;
    passes = std::max(passes, context->passes);
    if (chip.empty()) chip = context->chip;
    if (metrics.size() < context->metric_names.size()) metrics = context->metric_names;
  }
  if (enabled == 0 && failed > 0) return "off: " + last_error_.message();
  if (enabled == 0) return "on (no kernel measured)";
  std::string text = "on (auto range, kernel replay";
  if (passes > 0) text += ", " + std::to_string(passes) + " passes per kernel";
  text += ", " + std::to_string(enabled) + " context" + (enabled == 1 ? "" : "s");
  if (!chip.empty()) text += ", chip " + chip;
  text += "; metrics";
  for (size_t i = 0; i < metrics.size(); ++i) text += (i == 0 ? " " : ", ") + std::string(metrics[i]);
  if (failed > 0) text += "; " + std::to_string(failed) + " failed: " + last_error_.message();
  return text + claims_.StatusNote() + ")";
}

bool RangeProfilerSession::permission_denied() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return permission_denied_;
}

}  // namespace deepcontext::cupti
