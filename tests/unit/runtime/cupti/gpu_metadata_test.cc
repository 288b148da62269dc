#include "runtime/cupti/gpu_metadata.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace deepcontext::cupti {
namespace {

std::map<std::string, std::string> AsMap(
    const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : pairs) {
    EXPECT_TRUE(out.emplace(key, value).second) << "duplicate key " << key;
  }
  return out;
}

gpu::DeviceInfo Named(const std::string& name, int major, int minor, int sms) {
  gpu::DeviceInfo info = gpu::DeviceInfoForArch(major, minor, sms);
  info.name = name;
  return info;
}

TEST(GpuMetadataTest, DescribesDevicesActivityAndCounters) {
  GpuMetadataInput in;
  in.cupti_version = 130001;
  in.cupti_library = "/usr/local/cuda/lib/libcupti.so.13";
  in.driver_version = 13000;
  in.devices = {{0, Named("NVIDIA H200", 9, 0, 132)},
                {1, Named("NVIDIA H200", 9, 0, 132)},
                {2, Named("NVIDIA A100-SXM4-80GB", 8, 0, 108)}};
  in.devices[0].total_memory_bytes = 150754820096;
  gpu::DeviceActivity busy;
  busy.device = 1;
  busy.busy_ns = 5000;
  busy.kernels = 3;
  busy.first_start_ns = 100;
  busy.last_end_ns = 9000;
  in.activity = {busy};
  in.stats.launches = 10;
  in.stats.unattributed = 2;
  in.stats.late = 1;
  in.stats.via_graph_node = 4;
  in.stats.evicted_launches = 5;
  in.counters.records = 12;
  in.dropped_records = 7;
  in.clock_offset_ns = -42;

  const auto m = AsMap(GpuMetadata(in));
  EXPECT_EQ(m.at("gpu_backend"), "cupti");
  EXPECT_EQ(m.at("cupti_version"), "130001");
  EXPECT_EQ(m.at("cupti_library"), "/usr/local/cuda/lib/libcupti.so.13");
  EXPECT_EQ(m.at("cuda_driver_version"), "13.0");
  EXPECT_EQ(m.at("gpu_devices"), "2x NVIDIA H200, NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(m.at("gpu0_name"), "NVIDIA H200");
  EXPECT_EQ(m.at("gpu2_compute_capability"), "8.0");
  EXPECT_EQ(m.at("gpu2_sm_count"), "108");
  // The device's memory when the driver told it; no entry otherwise.
  EXPECT_EQ(m.at("gpu0_memory_total_bytes"), "150754820096");
  EXPECT_EQ(m.count("gpu2_memory_total_bytes"), 0u);
  EXPECT_EQ(m.at("gpu1_busy_ns"), "5000");
  EXPECT_EQ(m.at("gpu1_kernels"), "3");
  EXPECT_EQ(m.at("gpu1_first_start_ns"), "100");
  EXPECT_EQ(m.at("gpu1_last_end_ns"), "9000");
  EXPECT_EQ(m.count("gpu0_busy_ns"), 0u);  // ran no kernels
  EXPECT_EQ(m.at("gpu_launches"), "10");
  EXPECT_EQ(m.at("gpu_records"), "12");
  EXPECT_EQ(m.at("gpu_unattributed_records"), "2");
  EXPECT_EQ(m.at("gpu_late_records"), "1");
  EXPECT_EQ(m.at("gpu_graph_node_records"), "4");
  EXPECT_EQ(m.at("gpu_evicted_launches"), "5");
  EXPECT_EQ(m.at("gpu_dropped_records"), "7");
  EXPECT_EQ(m.at("gpu_clock_offset_ns"), "-42");
  EXPECT_EQ(m.count("gpu_lost_records"), 0u);
  EXPECT_EQ(m.count("gpu_backend_warnings"), 0u);
  EXPECT_EQ(m.count("gpu_launches_without_records"), 0u);
  EXPECT_EQ(m.count("gpu_warning"), 0u);
  EXPECT_EQ(m.count("gpu_untimed_kernel_records"), 0u);
}

TEST(GpuMetadataTest, UntimedKernelRecordsAreCountedWhenThereAreAny) {
  GpuMetadataInput in;
  in.stats.untimed_kernels = 37;
  EXPECT_EQ(AsMap(GpuMetadata(in)).at("gpu_untimed_kernel_records"), "37");
}

TEST(GpuMetadataTest, LaunchesWithoutRecordsGiveAWarning) {
  GpuMetadataInput in;
  in.stats.launches_without_records = 1234;
  const auto m = AsMap(GpuMetadata(in));
  EXPECT_EQ(m.at("gpu_launches_without_records"), "1234");
  EXPECT_EQ(m.at("gpu_warning"), MissingRecordsWarning(1234));
  EXPECT_EQ(MissingRecordsWarning(1234),
            "1234 GPU launches got no activity records: another CUPTI client "
            "(torch.profiler, Nsight Systems, ...) probably replaced "
            "DeepContext's activity callbacks after it started; GPU times are "
            "incomplete");
}

TEST(GpuMetadataTest, OptionalKeysAppearOnlyWhenKnown) {
  GpuMetadataInput in;
  in.driver_version = 12040;
  in.counters.failed = 1;
  in.stats.dropped = 2;
  in.warnings = "memsets not traced (CUPTI_ERROR_NOT_SUPPORTED)";
  const auto m = AsMap(GpuMetadata(in));
  EXPECT_EQ(m.at("cuda_driver_version"), "12.4");
  EXPECT_EQ(m.at("gpu_lost_records"), "3");
  EXPECT_EQ(m.at("gpu_backend_warnings"), in.warnings);
  EXPECT_EQ(m.count("gpu_devices"), 0u);
  EXPECT_EQ(m.count("gpu_clock_offset_ns"), 0u);
  EXPECT_EQ(AsMap(GpuMetadata(GpuMetadataInput{})).count("cuda_driver_version"), 0u);
}

}  // namespace
}  // namespace deepcontext::cupti
