// The typed table of the CUPTI range profiler and profiler host entry points
// (cupti_range_profiler.h, cupti_profiler_host.h, cupti_profiler_target.h,
// CUDA 12.6+) that `--gpu-metrics` uses, resolved from the libcupti already
// loaded (cupti_loader.h) or handed in by tests, and the two driver calls
// it needs from libcuda. Includes the vendor headers: include it from .cc
// files only.
#pragma once

#include <cuda.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <string>

#include "common/status.h"

namespace deepcontext::cupti {

struct GpuMetricsFunctions {
  // Target side: the device and its counters.
  decltype(&::cuptiProfilerInitialize) profiler_initialize = nullptr;
  decltype(&::cuptiGetDeviceId) get_device_id = nullptr;
  decltype(&::cuptiDeviceGetChipName) get_chip_name = nullptr;
  decltype(&::cuptiProfilerGetCounterAvailability) get_counter_availability = nullptr;
  // Host side: the configuration and the evaluation of metrics.
  decltype(&::cuptiProfilerHostInitialize) host_initialize = nullptr;
  decltype(&::cuptiProfilerHostDeinitialize) host_deinitialize = nullptr;
  decltype(&::cuptiProfilerHostConfigAddMetrics) host_add_metrics = nullptr;
  decltype(&::cuptiProfilerHostGetConfigImageSize) host_config_image_size = nullptr;
  decltype(&::cuptiProfilerHostGetConfigImage) host_config_image = nullptr;
  decltype(&::cuptiProfilerHostGetNumOfPasses) host_passes = nullptr;
  decltype(&::cuptiProfilerHostEvaluateToGpuValues) host_evaluate = nullptr;
  // The range profiler of a context.
  decltype(&::cuptiRangeProfilerEnable) enable = nullptr;
  decltype(&::cuptiRangeProfilerDisable) disable = nullptr;
  decltype(&::cuptiRangeProfilerSetConfig) set_config = nullptr;
  decltype(&::cuptiRangeProfilerStart) start = nullptr;
  decltype(&::cuptiRangeProfilerStop) stop = nullptr;
  decltype(&::cuptiRangeProfilerDecodeData) decode = nullptr;
  decltype(&::cuptiRangeProfilerGetCounterDataSize) counter_data_size = nullptr;
  decltype(&::cuptiRangeProfilerCounterDataImageInitialize) counter_data_initialize = nullptr;
  decltype(&::cuptiRangeProfilerGetCounterDataInfo) counter_data_info = nullptr;
  // Optional, from libcuda (nullptr when absent): the kernel's name, so the
  // values land on the node its activity record names, and whether the
  // launch is being captured into a graph (it then runs no kernel).
  decltype(&::cuFuncGetName) func_get_name = nullptr;
  // Library kernels (cuBLAS, the CUDA runtime's context-independent
  // loading) are launched by their CUkernel handle, which only this names.
  decltype(&::cuKernelGetName) kernel_get_name = nullptr;
  decltype(&::cuStreamIsCapturing) stream_is_capturing = nullptr;
};

// Resolves the table from the libcupti at `library_path`, which must be
// loaded already. Before that, loads libnvperf_host.so and
// libnvperf_target.so from libcupti's own folder where they are, so that
// CUPTI finds them even when that folder is not on the loader's path.
// An error ("libcupti has no cuptiRangeProfilerEnable (CUPTI before 12.6)")
// when an entry point is missing.
Status ResolveGpuMetricsFunctions(const std::string& library_path,
                                       GpuMetricsFunctions* functions);

}  // namespace deepcontext::cupti
