#include "tests/unit/runtime/cupti/fake_range_profiler.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string_view>

namespace deepcontext::cupti {
namespace {

FakeRangeProfiler* g_fake = nullptr;
CUpti_RangeProfiler_Object* const kObject = reinterpret_cast<CUpti_RangeProfiler_Object*>(0x42);
CUpti_Profiler_Host_Object* const kHost = reinterpret_cast<CUpti_Profiler_Host_Object*>(0x43);

template <typename Params>
bool Sized(const Params* p, size_t size) {
  return p != nullptr && p->structSize == size;
}

CUptiResult Initialize(CUpti_Profiler_Initialize_Params* p) {
  g_fake->calls.push_back("Initialize");
  return Sized(p, CUpti_Profiler_Initialize_Params_STRUCT_SIZE) ? CUPTI_SUCCESS
                                                               : CUPTI_ERROR_INVALID_PARAMETER;
}
CUptiResult GetDeviceId(CUcontext, uint32_t* device) {
  *device = 0;
  return CUPTI_SUCCESS;
}
CUptiResult GetChipName(CUpti_Device_GetChipName_Params* p) {
  p->pChipName = g_fake->chip.c_str();
  return CUPTI_SUCCESS;
}
CUptiResult Availability(CUpti_Profiler_GetCounterAvailability_Params* p) {
  g_fake->calls.push_back("Availability");
  if (g_fake->availability_result != CUPTI_SUCCESS) return g_fake->availability_result;
  // Fails once a profiler is enabled on the context, as CUPTI's does.
  if (!g_fake->calls.empty() && g_fake->config.pRangeProfilerObject != nullptr) {
    return CUPTI_ERROR_INVALID_OPERATION;
  }
  if (p->pCounterAvailabilityImage == nullptr) {
    p->counterAvailabilityImageSize = 16;
  } else if (p->counterAvailabilityImageSize != 16) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}
CUptiResult HostInitialize(CUpti_Profiler_Host_Initialize_Params* p) {
  g_fake->calls.push_back("HostInitialize");
  if (p->profilerType != CUPTI_PROFILER_TYPE_RANGE_PROFILER || p->pChipName != g_fake->chip ||
      p->pCounterAvailabilityImage == nullptr) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  p->pHostObject = kHost;
  g_fake->added.clear();
  g_fake->host_refusing = false;
  return CUPTI_SUCCESS;
}
CUptiResult HostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params* p) {
  g_fake->calls.push_back("HostDeinitialize");
  return p->pHostObject == kHost ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}
// The chip's metrics: those any fixture kernel has a value for. Like
// CUPTI 13.0's, a host object that refused a metric refuses every later one.
CUptiResult AddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params* p) {
  if (g_fake->host_refusing) return CUPTI_ERROR_UNKNOWN;
  for (size_t i = 0; i < p->numMetrics; ++i) {
    bool known = false;
    for (const auto& [kernel, values] : g_fake->kernels) known |= values.count(p->ppMetricNames[i]) != 0;
    if (!known) {
      g_fake->host_refusing = true;
      return CUPTI_ERROR_INVALID_METRIC_NAME;
    }
  }
  for (size_t i = 0; i < p->numMetrics; ++i) g_fake->added.push_back(p->ppMetricNames[i]);
  return CUPTI_SUCCESS;
}
CUptiResult ConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params* p) {
  p->configImageSize = 64;
  return CUPTI_SUCCESS;
}
CUptiResult ConfigImage(CUpti_Profiler_Host_GetConfigImage_Params* p) {
  g_fake->calls.push_back("ConfigImage");
  return p->configImageSize == 64 ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}
CUptiResult Passes(CUpti_Profiler_Host_GetNumOfPasses_Params* p) {
  p->numOfPasses = 3;
  return CUPTI_SUCCESS;
}
CUptiResult Evaluate(CUpti_Profiler_Host_EvaluateToGpuValues_Params* p) {
  g_fake->calls.push_back("Evaluate");
  if (p->rangeIndex != 0 || p->pHostObject != kHost) return CUPTI_ERROR_INVALID_PARAMETER;
  const auto& values = g_fake->kernels.at(g_fake->running);
  for (size_t i = 0; i < p->numMetrics; ++i) {
    auto it = values.find(p->ppMetricNames[i]);
    p->pMetricValues[i] = it == values.end() ? 0.0 : it->second;
  }
  return CUPTI_SUCCESS;
}
CUptiResult Enable(CUpti_RangeProfiler_Enable_Params* p) {
  g_fake->calls.push_back("Enable");
  p->pRangeProfilerObject = kObject;
  return CUPTI_SUCCESS;
}
CUptiResult Disable(CUpti_RangeProfiler_Disable_Params* p) {
  g_fake->calls.push_back("Disable");
  return p->pRangeProfilerObject == kObject ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}
CUptiResult SetConfig(CUpti_RangeProfiler_SetConfig_Params* p) {
  g_fake->calls.push_back("SetConfig");
  g_fake->config = *p;
  return CUPTI_SUCCESS;
}
CUptiResult Start(CUpti_RangeProfiler_Start_Params*) {
  g_fake->calls.push_back("Start");
  if (g_fake->started) return CUPTI_ERROR_INVALID_OPERATION;
  g_fake->started = true;
  return CUPTI_SUCCESS;
}
CUptiResult Stop(CUpti_RangeProfiler_Stop_Params* p) {
  g_fake->calls.push_back("Stop");
  g_fake->started = false;
  p->isAllPassSubmitted = 1;
  return CUPTI_SUCCESS;
}
CUptiResult Decode(CUpti_RangeProfiler_DecodeData_Params*) {
  g_fake->calls.push_back("Decode");
  return CUPTI_SUCCESS;
}
CUptiResult CounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params* p) {
  if (p->maxNumOfRanges != 1 || p->numMetrics == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  p->counterDataSize = 128;
  return CUPTI_SUCCESS;
}
CUptiResult CounterDataInitialize(CUpti_RangeProfiler_CounterDataImage_Initialize_Params* p) {
  g_fake->calls.push_back("InitializeImage");
  return p->counterDataSize == 128 ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}
CUptiResult CounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params* p) {
  p->numTotalRanges = g_fake->ranges;
  return CUPTI_SUCCESS;
}
// Tests pass the name as the handle; names starting "lib:" stand for
// library kernels (CUkernel), which only cuKernelGetName names.
CUresult FuncGetName(const char** name, CUfunction function) {
  const char* text = reinterpret_cast<const char*>(function);
  if (std::string_view(text).starts_with("lib:")) return CUDA_ERROR_INVALID_HANDLE;
  *name = text;
  return CUDA_SUCCESS;
}
CUresult KernelGetName(const char** name, CUkernel kernel) {
  const char* text = reinterpret_cast<const char*>(kernel);
  if (!std::string_view(text).starts_with("lib:")) return CUDA_ERROR_INVALID_HANDLE;
  *name = text + 4;
  return CUDA_SUCCESS;
}
CUresult StreamIsCapturing(CUstream, CUstreamCaptureStatus* status) {
  *status = g_fake->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

}  // namespace

void InstallFakeRangeProfiler(FakeRangeProfiler* fake) { g_fake = fake; }

void LoadMetricsFixture(FakeRangeProfiler& fake) {
  std::ifstream in(std::string(DEEPCONTEXT_PC_FIXTURES) + "/gpu_metrics_h200.txt");
  ASSERT_TRUE(in.good());
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string kind, kernel, metric;
    double value = 0;
    if (!(words >> kind) || kind.starts_with("#")) continue;
    if (kind == "chip") {
      words >> fake.chip;
    } else if (kind == "value" && (words >> kernel >> metric >> value)) {
      fake.kernels[kernel][metric] = value;
    }
  }
}

GpuMetricsFunctions FakeFunctions() {
  GpuMetricsFunctions f;
  f.profiler_initialize = Initialize;
  f.get_device_id = GetDeviceId;
  f.get_chip_name = GetChipName;
  f.get_counter_availability = Availability;
  f.host_initialize = HostInitialize;
  f.host_deinitialize = HostDeinitialize;
  f.host_add_metrics = AddMetrics;
  f.host_config_image_size = ConfigImageSize;
  f.host_config_image = ConfigImage;
  f.host_passes = Passes;
  f.host_evaluate = Evaluate;
  f.enable = Enable;
  f.disable = Disable;
  f.set_config = SetConfig;
  f.start = Start;
  f.stop = Stop;
  f.decode = Decode;
  f.counter_data_size = CounterDataSize;
  f.counter_data_initialize = CounterDataInitialize;
  f.counter_data_info = CounterDataInfo;
  f.func_get_name = FuncGetName;
  f.kernel_get_name = KernelGetName;
  f.stream_is_capturing = StreamIsCapturing;
  return f;
}

}  // namespace deepcontext::cupti
