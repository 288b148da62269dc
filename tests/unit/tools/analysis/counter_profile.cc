#include "tests/unit/tools/analysis/counter_profile.h"

#include <optional>

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::analysis::testing {
namespace {

using format::FrameKind;
using format::NodeId;

struct Counters {
  double occupancy;  // 0..1
  double sm, dram;
  std::optional<double> tensor;
};

constexpr int kLaunches = 5;

// `launches` launches, the first `measured` of them measured: as CUPTI
// times no measured (replayed) launch, only the others have gpu_time
// samples, and the measured ones count in gpu_untimed_launches.
void MeasuredKernel(ProfileBuilder& b, NodeId line, const char* op, const char* kernel_name,
                    double gpu_ns, const Counters& c, int launches = 100,
                    int measured = kLaunches) {
  const NodeId api = b.Add(b.Add(line, FrameKind::kOperator, op), FrameKind::kGpuApi,
                           "cuLaunchKernel");
  const NodeId kernel = b.Add(api, FrameKind::kGpuKernel, kernel_name);
  if (launches > measured) b.Value(kernel, "gpu_time", gpu_ns, launches - measured);
  b.Value(kernel, "gpu_untimed_launches", measured, measured);
  b.Value(kernel, "gpu_occupancy_achieved", c.occupancy * measured, measured);
  b.Value(kernel, "gpu_sm_throughput_pct", c.sm * measured, measured);
  b.Value(kernel, "gpu_dram_throughput_pct", c.dram * measured, measured);
  if (c.tensor) b.Value(kernel, "gpu_tensor_pipe_pct", *c.tensor * measured, measured);
}

}  // namespace

format::Profile MakeCounterProfile() {
  ProfileBuilder b;
  b.Metric("gpu_time", "ns", "ns a kernel ran");
  b.Metric("gpu_occupancy_achieved", "fraction", "Achieved occupancy (--gpu-metrics)");
  b.Metric("gpu_sm_throughput_pct", "percent", "SM throughput (--gpu-metrics)");
  b.Metric("gpu_dram_throughput_pct", "percent", "DRAM throughput (--gpu-metrics)");
  b.Metric("gpu_tensor_pipe_pct", "percent", "Tensor pipe utilization (--gpu-metrics)");
  b.Metric("gpu_untimed_launches", "", "kernel launches without a GPU time");
  b.Meta("start_time_ns", "1000000000");
  b.Meta("end_time_ns", "2000000000");
  b.Meta("gpu0_busy_ns", "901000000");
  b.Meta("gpu0_compute_capability", "9.0");
  b.Meta("gpu0_sm_count", "132");
  b.Meta("gpu_metrics",
         "on (auto range, kernel replay, 11 passes per kernel, 1 context, chip GH100; metrics "
         "sm__warps_active.avg.pct_of_peak_sustained_active, "
         "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active)");
  b.Meta("gpu_metrics_measured", "26");
  b.Meta("gpu_untimed_kernel_records", "26");
  b.Meta("gpu_metrics_launches_per_kernel", "5");
  const NodeId thread = b.Add(0, FrameKind::kThread, "main thread");
  const char* file = "/home/user/kernels.py";
  const NodeId copy_line = b.Add(thread, FrameKind::kPythonFrame, "run_copy", file, 20);
  const NodeId launcher = b.Add(
      copy_line, FrameKind::kPythonFrame, "CudaLauncher.__call__",
      "/usr/lib/python3/dist-packages/triton/backends/nvidia/driver.py", 713);
  MeasuredKernel(b, launcher, "triton::copy", "copy_kernel", 300e6, {0.82, 21, 88, 0});
  MeasuredKernel(b, b.Add(thread, FrameKind::kPythonFrame, "run_gather", file, 25),
                 "aten::index", "gather_kernel", 250e6, {0.35, 9, 18, 0});
  MeasuredKernel(b, b.Add(thread, FrameKind::kPythonFrame, "project", file, 30),
                 "aten::mm", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64",
                 200e6, {0.12, 31, 26, 12});
  MeasuredKernel(b, b.Add(thread, FrameKind::kPythonFrame, "run_fma", file, 35),
                 "triton::fma", "fma_kernel", 150e6, {0.61, 92, 1, 0});
  MeasuredKernel(b, b.Add(thread, FrameKind::kPythonFrame, "run_tiny", file, 40),
                 "triton::tiny", "tiny_kernel", 1e6, {0.05, 2, 5, std::nullopt});
  // Launched once, so measured and untimed.
  MeasuredKernel(b, b.Add(thread, FrameKind::kPythonFrame, "setup", file, 45),
                 "aten::randn", "normal_kernel", 0, {0.51, 73, 8, std::nullopt}, 1, 1);
  return b.profile();
}

}  // namespace deepcontext::analysis::testing
