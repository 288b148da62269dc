// Hardware counters per kernel on the CPU: the range profiler and profiler
// host entry points are replaced by fakes that hand back metric values
// measured on an H200 (fixtures/gpu_metrics_h200.txt), and the tests check
// the calls the session makes, the values on the kernel nodes, the bound
// per (context, kernel), and what happens when the driver refuses counters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cupti/gpu_metrics.h"
#include "runtime/cupti/gpu_metrics_functions.h"
#include "runtime/cupti/gpu_metrics_session.h"
#include "runtime/gpu/gpu_attribution.h"
#include "runtime/gpu/kernel_counters.h"
#include "tests/unit/runtime/cupti/fake_range_profiler.h"
#include "tests/unit/runtime/gpu/fake_context_sink.h"

namespace deepcontext::cupti {
namespace {

// The fake sink plus named metrics, counted per node.
class CounterSink : public gpu::FakeContextSink {
 public:
  int RegisterNamedMetric(std::string_view name, std::string_view,
                          std::string_view) override {
    auto [it, inserted] = ids_.try_emplace(std::string(name), static_cast<int>(ids_.size()));
    return it->second;
  }
  void AddNamed(gpu::ContextId context, int metric, double value) override {
    sums_[{context, metric}] += value;
    ++counts_[{context, metric}];
  }
  double Mean(gpu::ContextId node, const std::string& metric) const {
    const auto key = std::make_pair(node, ids_.at(metric));
    auto count = counts_.find(key);
    return count == counts_.end() ? NAN : sums_.at(key) / count->second;
  }
  int Count(gpu::ContextId node, const std::string& metric) const {
    auto count = counts_.find({node, ids_.at(metric)});
    return count == counts_.end() ? 0 : count->second;
  }

 private:
  std::map<std::string, int> ids_;
  std::map<std::pair<gpu::ContextId, int>, double> sums_;
  std::map<std::pair<gpu::ContextId, int>, int> counts_;
};

std::string Value(const std::vector<std::pair<std::string, std::string>>& metadata,
                  const std::string& key) {
  for (const auto& [k, v] : metadata) {
    if (k == key) return v;
  }
  return "";
}

class GpuMetricsTest : public ::testing::Test {
 protected:
  static constexpr gpu::ContextId kLine = 7;  // a Python line's context
  void SetUp() override {
    InstallFakeRangeProfiler(&fake_);
    LoadMetricsFixture(fake_);
    functions_ = FakeFunctions();
  }
  void TearDown() override { InstallFakeRangeProfiler(nullptr); }

  // One cuLaunchKernel of `kernel` from `context`, entry and exit.
  void Launch(GpuMetrics& metrics, const std::string& kernel, uint32_t correlation,
              gpu::ContextId context = kLine) {
    cuLaunchKernel_params params{};
    params.f = Handle(kernel);
    fake_.running = kernel;
    metrics.OnApiEnter(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &params, correlation, context,
                       "cuLaunchKernel", cuda_context_);
    metrics.OnApiExit(correlation);
  }
  // A kernel's handle, the same for every launch of it, as the driver's.
  CUfunction Handle(const std::string& kernel) {
    const std::string& name = names_.try_emplace(kernel, kernel).first->second;
    return reinterpret_cast<CUfunction>(const_cast<char*>(name.c_str()));
  }
  gpu::ContextId Kernel(const std::string& kernel, gpu::ContextId context = kLine) {
    return sink_.Find(context, {"cuLaunchKernel", kernel});
  }

  FakeRangeProfiler fake_;
  GpuMetricsFunctions functions_;
  CounterSink sink_;
  std::map<std::string, std::string> names_;
  void* cuda_context_ = reinterpret_cast<void*>(0x1000);
};

TEST_F(GpuMetricsTest, MeasuresLaunchesOntoTheKernelNodeWithinTheBound) {
  GpuMetrics metrics(sink_, &functions_, 2, "", nullptr);
  Launch(metrics, "copy_kernel", 1);
  Launch(metrics, "fma_kernel", 2);
  Launch(metrics, "copy_kernel", 3);
  Launch(metrics, "copy_kernel", 4);  // third of copy_kernel here: over the bound

  const gpu::ContextId copy = Kernel("copy_kernel");
  const gpu::ContextId fma = Kernel("fma_kernel");
  ASSERT_NE(copy, 0u);
  ASSERT_NE(fma, 0u);
  EXPECT_EQ(sink_.Count(copy, "gpu_dram_throughput_pct"), 2);
  EXPECT_EQ(sink_.Count(fma, "gpu_dram_throughput_pct"), 1);
  // The fixture's H200 values: the copy kernel is DRAM-bound, the FMA
  // kernel SM-bound; occupancy is kept as 0..1.
  const auto& copy_values = fake_.kernels.at("copy_kernel");
  EXPECT_DOUBLE_EQ(sink_.Mean(copy, "gpu_dram_throughput_pct"),
                   copy_values.at("dram__throughput.avg.pct_of_peak_sustained_elapsed"));
  EXPECT_GT(sink_.Mean(copy, "gpu_dram_throughput_pct"), 70);
  EXPECT_GT(sink_.Mean(fma, "gpu_sm_throughput_pct"), 70);
  EXPECT_LT(sink_.Mean(fma, "gpu_dram_throughput_pct"), 10);
  EXPECT_DOUBLE_EQ(
      sink_.Mean(copy, "gpu_occupancy_achieved"),
      copy_values.at("sm__warps_active.avg.pct_of_peak_sustained_active") / 100.0);

  const gpu::KernelCounterStats stats = metrics.Stats();
  EXPECT_EQ(stats.measured, 3u);
  EXPECT_EQ(stats.over_limit, 1u);
  EXPECT_EQ(stats.kernels, 2u);

  // Enabled once, one range per launch, the image reset after each.
  const std::vector<std::string> first(fake_.calls.begin(), fake_.calls.begin() + 15);
  EXPECT_EQ(first, (std::vector<std::string>{
                       "Initialize", "Availability", "Availability", "HostInitialize",
                       "ConfigImage", "Enable", "InitializeImage", "SetConfig", "Start",
                       "Stop", "Decode", "Evaluate", "InitializeImage", "Start", "Stop"}));
  EXPECT_EQ(fake_.config.range, CUPTI_AutoRange);
  EXPECT_EQ(fake_.config.replayMode, CUPTI_KernelReplay);
  EXPECT_EQ(std::count(fake_.calls.begin(), fake_.calls.end(), "Start"), 3);

  metrics.Stop();
  EXPECT_EQ(fake_.calls.back(), "HostDeinitialize");
  EXPECT_EQ(fake_.calls[fake_.calls.size() - 2], "Disable");
  const auto metadata = metrics.Metadata();
  EXPECT_EQ(Value(metadata, "gpu_metrics_measured"), "3");
  EXPECT_EQ(Value(metadata, "gpu_metrics_unmeasured"), "1");
  EXPECT_EQ(Value(metadata, "gpu_metrics_launches_per_kernel"), "2");
  EXPECT_NE(Value(metadata, "gpu_metrics").find("on (auto range, kernel replay, 3 passes"),
            std::string::npos)
      << Value(metadata, "gpu_metrics");
  EXPECT_EQ(Value(metadata, "warning_gpu_metrics"), "");
}

TEST_F(GpuMetricsTest, TensorPipeIsTheBusiestTensorMetricTheChipHas) {
  const char* hmma = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";
  const char* gmma = "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active";
  {
    // The H200 took hmma only: its value is the tensor pipe's.
    GpuMetrics metrics(sink_, &functions_, 5, "", nullptr);
    Launch(metrics, "copy_kernel", 1);
    EXPECT_DOUBLE_EQ(sink_.Mean(Kernel("copy_kernel"), "gpu_tensor_pipe_pct"),
                     fake_.kernels.at("copy_kernel").at(hmma));
    metrics.Stop();
  }
  // A chip that has both (a made-up value for gmma): the busier one.
  fake_.kernels["fma_kernel"][gmma] = 42.0;
  fake_.config = {};  // the first session's profiler is gone
  GpuMetrics metrics(sink_, &functions_, 5, "", nullptr);
  Launch(metrics, "fma_kernel", 2);
  EXPECT_DOUBLE_EQ(sink_.Mean(Kernel("fma_kernel"), "gpu_tensor_pipe_pct"), 42.0);
}

// A refused metric before others: the others are still measured.
TEST_F(GpuMetricsTest, AMetricMissingBeforeOthersLeavesOnlyItselfOut) {
  for (auto& [kernel, values] : fake_.kernels) {
    values.erase("dram__throughput.avg.pct_of_peak_sustained_elapsed");
  }
  GpuMetrics metrics(sink_, &functions_, 5, "", nullptr);
  Launch(metrics, "copy_kernel", 1);
  EXPECT_EQ(fake_.added,
            (std::vector<std::string>{
                "sm__warps_active.avg.pct_of_peak_sustained_active",
                "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"}));
  const gpu::ContextId copy = Kernel("copy_kernel");
  EXPECT_EQ(sink_.Count(copy, "gpu_dram_throughput_pct"), 0);
  EXPECT_EQ(sink_.Count(copy, "gpu_sm_throughput_pct"), 1);
  EXPECT_EQ(sink_.Count(copy, "gpu_tensor_pipe_pct"), 1);
  EXPECT_EQ(std::count(fake_.calls.begin(), fake_.calls.end(), "HostInitialize"), 2);
  metrics.Stop();
  EXPECT_EQ(std::count(fake_.calls.begin(), fake_.calls.end(), "HostDeinitialize"), 2);
}

TEST_F(GpuMetricsTest, AChipWithoutAMetricMeasuresTheOthers) {
  for (auto& [kernel, values] : fake_.kernels) {
    values.erase("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active");
    values.erase("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active");
  }
  GpuMetrics metrics(sink_, &functions_, 5, "", nullptr);
  Launch(metrics, "copy_kernel", 1);
  EXPECT_EQ(fake_.added.size(), 3u);
  const gpu::ContextId copy = Kernel("copy_kernel");
  EXPECT_EQ(sink_.Count(copy, "gpu_tensor_pipe_pct"), 0);
  EXPECT_EQ(sink_.Count(copy, "gpu_sm_throughput_pct"), 1);
}

TEST_F(GpuMetricsTest, LibraryKernelsAreNamedByTheirKernelHandle) {
  // cuBLAS and the CUDA runtime launch CUkernel handles (context-independent
  // loading), which cuFuncGetName refuses.
  GpuMetrics metrics(sink_, &functions_, 5, "", nullptr);
  fake_.kernels["copy_kernel"] = fake_.kernels.at("copy_kernel");
  cuLaunchKernel_params params{};
  params.f = Handle("lib:copy_kernel");
  fake_.running = "copy_kernel";
  metrics.OnApiEnter(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &params, 1, kLine,
                     "cuLaunchKernel", cuda_context_);
  metrics.OnApiExit(1);
  EXPECT_EQ(sink_.Count(Kernel("copy_kernel"), "gpu_sm_throughput_pct"), 1);

  // A driver that names neither: the launch is counted as failed, never
  // started, and the bound still holds.
  functions_.kernel_get_name = nullptr;
  fake_.calls.clear();
  for (uint32_t correlation = 2; correlation < 9; ++correlation) {
    metrics.OnApiEnter(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &params, correlation, kLine,
                       "cuLaunchKernel", cuda_context_);
    metrics.OnApiExit(correlation);
  }
  EXPECT_EQ(std::count(fake_.calls.begin(), fake_.calls.end(), "Start"), 0);
  EXPECT_EQ(metrics.Stats().failed, 4u);      // the bound's 5, less the one measured
  EXPECT_EQ(metrics.Stats().over_limit, 3u);
}

TEST_F(GpuMetricsTest, RefusedCountersWarnOnceAndLaunchesGoOn) {
  fake_.availability_result = CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  GpuMetrics metrics(sink_, &functions_, 5, "", nullptr);
  Launch(metrics, "copy_kernel", 1);
  Launch(metrics, "copy_kernel", 2);
  EXPECT_EQ(std::count(fake_.calls.begin(), fake_.calls.end(), "Availability"), 1);
  EXPECT_EQ(std::count(fake_.calls.begin(), fake_.calls.end(), "Start"), 0);
  const auto metadata = metrics.Metadata();
  EXPECT_TRUE(Value(metadata, "gpu_metrics").starts_with("off: the GPU driver lets only "
                                                        "administrators read performance counters"))
      << Value(metadata, "gpu_metrics");
  EXPECT_NE(Value(metadata, "warning_gpu_metrics").find("ERR_NVGPUCTRPERM"), std::string::npos);
  EXPECT_EQ(Value(metadata, "gpu_metrics_measured"), "0");
}

TEST_F(GpuMetricsTest, BusyCountersSayWhoHoldsThem) {
  fake_.availability_result = CUPTI_ERROR_HARDWARE_BUSY;
  GpuMetrics metrics(sink_, &functions_, 5, "",
                     [](int) { return std::string("CUPTI_ERROR_HARDWARE_BUSY"); });
  Launch(metrics, "copy_kernel", 1);
  const auto metadata = metrics.Metadata();
  EXPECT_EQ(Value(metadata, "gpu_metrics"),
            "off: cuptiProfilerGetCounterAvailability failed: CUPTI_ERROR_HARDWARE_BUSY "
            "(another process or profiler is using this GPU's performance counters; run one "
            "fine-grained collection per GPU at a time)");
}

TEST_F(GpuMetricsTest, ARangeThatIsNotTheLaunchsOwnIsDropped) {
  GpuMetrics metrics(sink_, &functions_, 5, "", nullptr);
  fake_.ranges = 2;  // another thread's kernel ran in the range
  Launch(metrics, "copy_kernel", 1);
  EXPECT_EQ(Kernel("copy_kernel"), 0u);
  EXPECT_EQ(metrics.Stats().failed, 1u);
  EXPECT_EQ(fake_.calls.back(), "InitializeImage");  // ready for the next one
  fake_.ranges = 1;
  Launch(metrics, "copy_kernel", 2);
  EXPECT_EQ(sink_.Count(Kernel("copy_kernel"), "gpu_dram_throughput_pct"), 1);
}

TEST_F(GpuMetricsTest, CapturedLaunchesAndOtherCallsAreNotMeasured) {
  GpuMetrics metrics(sink_, &functions_, 5, "", nullptr);
  fake_.capturing = true;
  Launch(metrics, "copy_kernel", 1);
  fake_.capturing = false;
  cuMemcpy_params copy{};
  metrics.OnApiEnter(CUPTI_DRIVER_TRACE_CBID_cuMemcpy, &copy, 2, kLine, "cuMemcpy",
                     cuda_context_);
  metrics.OnApiExit(2);
  EXPECT_TRUE(fake_.calls.empty());
  EXPECT_EQ(metrics.Stats().measured + metrics.Stats().over_limit, 0u);
}

TEST_F(GpuMetricsTest, ExitOfAnotherLaunchDoesNotEndTheMeasurement) {
  GpuMetrics metrics(sink_, &functions_, 5, "", nullptr);
  cuLaunchKernel_params params{};
  params.f = Handle("copy_kernel");
  fake_.running = "copy_kernel";
  metrics.OnApiEnter(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &params, 10, kLine,
                     "cuLaunchKernel", cuda_context_);
  metrics.OnApiExit(11);
  EXPECT_TRUE(fake_.started);
  metrics.OnApiExit(10);
  EXPECT_FALSE(fake_.started);
  EXPECT_EQ(metrics.Stats().measured, 1u);
}

TEST_F(GpuMetricsTest, ImpossibleMeasurementSaysWhy) {
  GpuMetrics metrics(sink_, nullptr, 5,
                     "off: libcupti has no cuptiRangeProfilerEnable (the range profiler "
                     "needs CUPTI 12.6+)",
                     nullptr);
  Launch(metrics, "copy_kernel", 1);
  const auto metadata = metrics.Metadata();
  EXPECT_TRUE(Value(metadata, "gpu_metrics").starts_with("off: libcupti has no"));
  EXPECT_NE(Value(metadata, "warning_gpu_metrics"), "");
}

// What the H200 run of tests/gpu/programs/gpu_metrics.py recorded
// (--gpu-metrics, 5 launches per kernel): the activity records of measured
// launches came with start = end = 0, CUPTI's "could not be timed"; every
// measured kernel had a gpu_time of 0 in its samples, and the device's
// kernel count (records with a duration) was 45 of 82 records, exactly the
// launches not measured. The nvjet GEMM: 20 launches, 5 measured, 2.67 ms
// over the 15 timed. Replayed here through the range profiler and the
// attribution on one sink: the counters of measured launches stay, their
// records leave gpu_time alone, and a kernel launched once has counters and
// an untimed launch but no gpu_time.
TEST_F(GpuMetricsTest, MeasuredLaunchesKeepCountersAndLeaveGpuTimeToTheOthers) {
  GpuMetrics metrics(sink_, &functions_, 5, "", nullptr);
  gpu::GpuAttribution attribution(sink_);
  constexpr uint64_t kGemmNs = 2671929;  // recorded: 15 timed launches
  uint64_t clock = 1000000;
  uint32_t correlation = 0;
  auto launch = [&](const std::string& kernel, uint64_t duration_ns) {
    ++correlation;
    gpu::LaunchRecord record;
    record.correlation_id = correlation;
    record.context = kLine;
    record.api_name = "cuLaunchKernel";
    record.expected_records = 1;
    attribution.OnLaunch(record);
    const uint64_t measured_before = metrics.Stats().measured;
    Launch(metrics, kernel, correlation);
    const bool measured = metrics.Stats().measured > measured_before;
    gpu::KernelRecord kernel_record;
    kernel_record.correlation_id = correlation;
    kernel_record.name = kernel;
    kernel_record.grid_x = kernel_record.grid_y = kernel_record.grid_z = 1;
    kernel_record.block_x = kernel_record.block_y = kernel_record.block_z = 1;
    if (!measured) {  // measured: CUPTI's 0, 0
      kernel_record.start_ns = clock;
      kernel_record.end_ns = clock + duration_ns;
      clock += duration_ns + 1000;
    }
    attribution.OnKernel(kernel_record);
  };
  // The GEMM's counts under a kernel name the fixture has values for.
  for (int i = 0; i < 20; ++i) launch("copy_kernel", kGemmNs / 15);
  launch("fma_kernel", 500000);  // its only launch: measured

  const gpu::ContextId copy = Kernel("copy_kernel");
  ASSERT_NE(copy, 0u);
  EXPECT_EQ(sink_.Count(copy, "gpu_sm_throughput_pct"), 5);
  EXPECT_EQ(sink_.Get(copy, gpu::GpuMetric::kGpuTime).count, 15u);
  EXPECT_EQ(sink_.Get(copy, gpu::GpuMetric::kUntimedLaunches).count, 5u);
  EXPECT_EQ(sink_.Get(copy, gpu::GpuMetric::kBlocks).count, 20u);
  // The mean is that of a normal launch, not diluted by 5 zeros.
  const auto gpu_time = sink_.Get(copy, gpu::GpuMetric::kGpuTime);
  EXPECT_DOUBLE_EQ(gpu_time.sum / gpu_time.count, static_cast<double>(kGemmNs / 15));

  const gpu::ContextId fma = Kernel("fma_kernel");
  ASSERT_NE(fma, 0u);
  EXPECT_EQ(sink_.Count(fma, "gpu_sm_throughput_pct"), 1);
  EXPECT_EQ(sink_.Get(fma, gpu::GpuMetric::kGpuTime).count, 0u);
  EXPECT_EQ(sink_.Get(fma, gpu::GpuMetric::kUntimedLaunches).count, 1u);

  EXPECT_EQ(attribution.Stats().untimed_kernels, metrics.Stats().measured);
  ASSERT_EQ(attribution.Devices().size(), 1u);
  EXPECT_EQ(attribution.Devices()[0].kernels, 15u);
}

TEST(KernelCounterLimit, ReadsTheBoundAndWarnsOnBadText) {
  std::string warning;
  EXPECT_EQ(gpu::KernelCounterLimitFromText(nullptr, &warning), gpu::kDefaultLaunchesPerKernel);
  EXPECT_EQ(gpu::KernelCounterLimitFromText("12", &warning), 12u);
  EXPECT_TRUE(warning.empty());
  EXPECT_EQ(gpu::KernelCounterLimitFromText("0", &warning), gpu::kDefaultLaunchesPerKernel);
  EXPECT_NE(warning.find("DEEPCONTEXT_GPU_METRICS_KERNELS=0"), std::string::npos);
  warning.clear();
  EXPECT_EQ(gpu::KernelCounterLimitFromText("5x", &warning), gpu::kDefaultLaunchesPerKernel);
  EXPECT_FALSE(warning.empty());
}

}  // namespace
}  // namespace deepcontext::cupti
