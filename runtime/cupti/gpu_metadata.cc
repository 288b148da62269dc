#include "runtime/cupti/gpu_metadata.h"

namespace deepcontext::cupti {

std::vector<std::pair<std::string, std::string>> GpuMetadata(
    const GpuMetadataInput& in) {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&out](std::string key, std::string value) {
    out.emplace_back(std::move(key), std::move(value));
  };
  add("gpu_backend", "cupti");
  add("cupti_version", std::to_string(in.cupti_version));
  add("cupti_library", in.cupti_library);
  if (in.driver_version > 0) {
    add("cuda_driver_version", std::to_string(in.driver_version / 1000) + "." +
                                   std::to_string(in.driver_version % 1000 / 10));
  }

  std::vector<std::pair<std::string, int>> models;  // name, count; first seen first
  for (const auto& [device, info] : in.devices) {
    const std::string prefix = "gpu" + std::to_string(device) + "_";
    add(prefix + "name", info.name);
    add(prefix + "compute_capability", std::to_string(info.compute_major) + "." +
                                           std::to_string(info.compute_minor));
    add(prefix + "sm_count", std::to_string(info.sm_count));
    if (info.total_memory_bytes > 0) {
      add(prefix + "memory_total_bytes", std::to_string(info.total_memory_bytes));
    }
    bool counted = false;
    for (auto& model : models) {
      if (model.first == info.name) {
        ++model.second;
        counted = true;
      }
    }
    if (!counted) models.emplace_back(info.name, 1);
  }
  std::string gpu;
  for (const auto& [name, n] : models) {
    if (!gpu.empty()) gpu += ", ";
    gpu += n > 1 ? std::to_string(n) + "x " + name : name;
  }
  if (!gpu.empty()) add("gpu_devices", gpu);
  for (const gpu::DeviceActivity& activity : in.activity) {
    const std::string prefix = "gpu" + std::to_string(activity.device) + "_";
    add(prefix + "busy_ns", std::to_string(activity.busy_ns));
    add(prefix + "kernels", std::to_string(activity.kernels));
    add(prefix + "first_start_ns", std::to_string(activity.first_start_ns));
    add(prefix + "last_end_ns", std::to_string(activity.last_end_ns));
  }

  add("gpu_launches", std::to_string(in.stats.launches));
  add("gpu_records", std::to_string(in.counters.records));
  add("gpu_unattributed_records", std::to_string(in.stats.unattributed));
  if (in.stats.outside_windows > 0) {
    add("gpu_records_outside_windows", std::to_string(in.stats.outside_windows));
  }
  add("gpu_late_records", std::to_string(in.stats.late));
  add("gpu_graph_node_records", std::to_string(in.stats.via_graph_node));
  add("gpu_evicted_launches", std::to_string(in.stats.evicted_launches));
  if (in.stats.untimed_kernels > 0) {
    add("gpu_untimed_kernel_records", std::to_string(in.stats.untimed_kernels));
  }
  add("gpu_dropped_records", std::to_string(in.dropped_records));
  // Records lost on our side: buffers abandoned on an error, and samples
  // whose node could not be created.
  if (const uint64_t lost = in.counters.failed + in.stats.dropped; lost > 0) {
    add("gpu_lost_records", std::to_string(lost));
  }
  if (in.clock_offset_ns.has_value()) {
    add("gpu_clock_offset_ns", std::to_string(*in.clock_offset_ns));
  }
  if (!in.warnings.empty()) add("gpu_backend_warnings", in.warnings);
  if (const uint64_t missing = in.stats.launches_without_records; missing > 0) {
    add("gpu_launches_without_records", std::to_string(missing));
    add("gpu_warning", MissingRecordsWarning(missing));
  }
  return out;
}

std::string MissingRecordsWarning(uint64_t launches) {
  return std::to_string(launches) +
         " GPU launches got no activity records: another CUPTI client "
         "(torch.profiler, Nsight Systems, ...) probably replaced "
         "DeepContext's activity callbacks after it started; GPU times are "
         "incomplete";
}

}  // namespace deepcontext::cupti
