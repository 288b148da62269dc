#include "tests/unit/tools/analysis/stall_profile.h"

#include <string>
#include <utility>
#include <vector>

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::analysis::testing {
namespace {

using format::FrameKind;
using format::NodeId;

struct Pc {
  const char* name;
  std::vector<std::pair<const char*, double>> stalls;
};

NodeId SampledKernel(ProfileBuilder& b, NodeId line, const char* op,
                     const char* kernel_name, double gpu_ns,
                     const std::vector<Pc>& pcs) {
  const NodeId api = b.Add(b.Add(line, FrameKind::kOperator, op), FrameKind::kGpuApi,
                           "cuLaunchKernel");
  const NodeId kernel = b.Add(api, FrameKind::kGpuKernel, kernel_name);
  b.Value(kernel, "gpu_time", gpu_ns, 100);
  for (const Pc& pc : pcs) {
    const NodeId node = b.Add(kernel, FrameKind::kGpuInstruction, pc.name);
    double total = 0;
    for (const auto& [metric, samples] : pc.stalls) {
      b.Value(node, std::string("gpu_stall_") + metric, samples);
      total += samples;
    }
    b.Value(node, "gpu_samples", total);
  }
  return kernel;
}

// gpu_time, gpu_samples and one gpu_stall_<reason> metric per reason, in
// that order, described as the runtime describes them.
void StallMetrics(ProfileBuilder& b, const std::vector<std::string>& reasons) {
  static const std::vector<std::pair<std::string, std::string>> kDescriptions = {
      {"long_scoreboard",
       "waiting for global/local memory (L1TEX): memory-bound or poor locality"},
      {"math_pipe_throttle", "math pipe busy: compute-bound on that pipe"},
      {"selected", "issuing: the warp was doing work"},
      {"wait", "fixed-latency execution dependency: too little instruction-level parallelism"}};
  b.Metric("gpu_time", "ns", "ns a kernel ran");
  b.Metric("gpu_samples", "samples",
           "GPU instruction samples (CUPTI PC sampling), every stall reason");
  for (const std::string& reason : reasons) {
    for (const auto& [name, description] : kDescriptions) {
      if (name == reason) {
        b.Metric("gpu_stall_" + name, "samples", "GPU instruction samples: " + description);
      }
    }
  }
}

}  // namespace

format::Profile MakeStallProfile() {
  ProfileBuilder b;
  StallMetrics(b, {"long_scoreboard", "math_pipe_throttle", "selected", "wait"});
  b.Meta("start_time_ns", "1000000000");
  b.Meta("end_time_ns", "2000000000");
  b.Meta("gpu0_busy_ns", "701000000");
  b.Meta("gpu0_compute_capability", "9.0");
  b.Meta("gpu0_sm_count", "132");
  b.Meta("gpu_samples", "on (kernel-serialized, every stall reason, 1 context)");
  const NodeId thread = b.Add(0, FrameKind::kThread, "main thread");
  const char* file = "/home/user/kernels.py";
  // Launched through Triton, whose launcher is the kernel's nearest Python
  // frame: the line the user wrote is above it.
  const NodeId copy_line = b.Add(thread, FrameKind::kPythonFrame, "run_copy", file, 20);
  const NodeId launcher = b.Add(
      copy_line, FrameKind::kPythonFrame, "CudaLauncher.__call__",
      "/usr/lib/python3/dist-packages/triton/backends/nvidia/driver.py", 713);
  SampledKernel(b, launcher, "triton::copy", "copy_kernel", 400e6,
                {{"pc 0x0080", {{"long_scoreboard", 500}, {"selected", 60}, {"wait", 40}}},
                 {"pc 0x00a0", {{"long_scoreboard", 200}, {"selected", 40}}},
                 {"pc 0x00f0", {{"wait", 100}, {"selected", 60}}}});
  SampledKernel(b, b.Add(thread, FrameKind::kPythonFrame, "run_fma", file, 30),
                "triton::fma", "fma_kernel", 300e6,
                {{"pc 0x0100", {{"math_pipe_throttle", 330}, {"wait", 120}, {"selected", 150}}},
                 {"pc 0x0110", {{"math_pipe_throttle", 220}, {"wait", 80}, {"selected", 100}}}});
  SampledKernel(b, b.Add(thread, FrameKind::kPythonFrame, "run_tiny", file, 40),
                "triton::tiny", "tiny_kernel", 1e6, {{"pc 0x0010", {{"wait", 10}}}});
  return b.profile();
}

format::Profile MakeSassProfile(const std::string& cubin_dir) {
  ProfileBuilder b;
  StallMetrics(b, {"long_scoreboard", "selected", "wait"});
  b.Meta("start_time_ns", "1000000000");
  b.Meta("end_time_ns", "2000000000");
  b.Meta("gpu0_compute_capability", "9.0");
  b.Meta("gpu_samples", "on (kernel-serialized, every stall reason, 1 context)");
  b.Meta("gpu_samples_cubin_dir", cubin_dir);
  b.Meta("gpu_samples_cubins", kSassCubinName);
  const NodeId thread = b.Add(0, FrameKind::kThread, "main thread");
  const NodeId line = b.Add(thread, FrameKind::kPythonFrame, "run_scale_add",
                            "/home/user/scale.py", 12);
  const char* source = "/home/user/scale_add.cu";
  const NodeId kernel =
      b.Add(b.Add(line, FrameKind::kGpuApi, "cuLaunchKernel"), FrameKind::kGpuKernel,
            "scale_add");
  b.Value(kernel, "gpu_time", 200e6, 100);
  struct Sampled {
    const char* pc;
    uint32_t line;
    std::vector<std::pair<const char*, double>> stalls;
  };
  const std::vector<Sampled> sampled = {
      {"pc 0x00f0", 8, {{"long_scoreboard", 700}, {"selected", 20}}},
      {"pc 0x00d0", 7, {{"wait", 80}, {"selected", 20}}},
      {"pc 0x0130", 8, {{"wait", 60}, {"selected", 20}}},
      {"pc 0x0070", 6, {{"selected", 10}}},
      {"pc 0x0400", 0, {{"wait", 5}}}};
  for (const Sampled& pc : sampled) {
    const NodeId node = b.Add(kernel, FrameKind::kGpuInstruction, pc.pc,
                              pc.line != 0 ? source : "", pc.line);
    double total = 0;
    for (const auto& [metric, samples] : pc.stalls) {
      b.Value(node, std::string("gpu_stall_") + metric, samples);
      total += samples;
    }
    b.Value(node, "gpu_samples", total);
  }
  return b.profile();
}

}  // namespace deepcontext::analysis::testing
