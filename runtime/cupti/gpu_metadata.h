// The key/value pairs the GPU backend adds to a profile's metadata, built
// from plain inputs so the format can be tested without CUPTI or a GPU. No
// vendor headers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cupti/activity_processor.h"
#include "runtime/gpu/gpu_attribution.h"
#include "runtime/gpu/occupancy.h"

namespace deepcontext::cupti {

struct GpuMetadataInput {
  uint32_t cupti_version = 0;
  std::string cupti_library;
  int driver_version = 0;  // cuDriverGetVersion(); 0 = unknown
  std::map<uint32_t, gpu::DeviceInfo> devices;  // by ordinal
  std::vector<gpu::DeviceActivity> activity;
  gpu::AttributionStats stats;
  ActivityCounters counters;
  uint64_t dropped_records = 0;  // as counted by CUPTI
  // CUPTI timestamp minus CLOCK_REALTIME, both in ns; unset = unknown.
  std::optional<int64_t> clock_offset_ns;
  std::string warnings;
};

// Keys: gpu_backend, cupti_version, cupti_library, cuda_driver_version
// ("13.0"), gpu ("NVIDIA H200", "2x NVIDIA H200, NVIDIA A100"), per device
// gpu<N>_{name, compute_capability, sm_count, memory_total_bytes, busy_ns, kernels,
// first_start_ns, last_end_ns}, gpu_{launches, records,
// unattributed_records, late_records, graph_node_records,
// evicted_launches, dropped_records}, gpu_lost_records (when nonzero),
// gpu_clock_offset_ns (when known), gpu_backend_warnings (when any),
// gpu_launches_without_records and gpu_warning (when launches got no
// activity records, see MissingRecordsWarning).
std::vector<std::pair<std::string, std::string>> GpuMetadata(
    const GpuMetadataInput& input);

// "N GPU launches got no activity records: another CUPTI client ...": the
// profile's gpu_warning and the backend's one line on stderr when records
// stopped arriving (AttributionStats::launches_without_records).
std::string MissingRecordsWarning(uint64_t launches);

}  // namespace deepcontext::cupti
