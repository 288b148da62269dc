// Writes the .dctx files the `deepcontext report` integration tests read:
// two ranks of the training example, a profile whose gpu_time metric has no
// values, a file with foreign bytes and a truncated copy of a real profile,
// a GPU training step as a CUDA machine records it (mangled kernel names,
// torch's module wrappers, the profiler's own native frames, a launcher
// warning), a CPU profile with only wall_time values, and two small
// hostile files: millions of empty strings compressed to a few KB, and 8k
// metrics over 8k nodes.
#include <cstdio>
#include <fstream>
#include <string>

#include "format/dctx_file.h"
#include "tests/unit/tools/analysis/counter_profile.h"
#include "tests/unit/tools/analysis/stall_profile.h"
#include "tests/unit/tools/analysis/test_profiles.h"

namespace {

using deepcontext::analysis::testing::kMs;
using deepcontext::analysis::testing::ProfileBuilder;
using deepcontext::format::EncodeProfile;
using deepcontext::format::FrameKind;
using deepcontext::format::Profile;
using deepcontext::format::WriteProfileFile;

bool Write(const Profile& profile, const std::string& path) {
  const deepcontext::Status written = WriteProfileFile(profile, path);
  if (!written.ok()) std::fprintf(stderr, "%s\n", written.message().c_str());
  return written.ok();
}

bool WriteBytes(const std::string& bytes, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  return static_cast<bool>(out);
}

// A forward and backward step of a model on a GPU, with the frames a CUDA
// run of torch 2 records: Module._wrapped_call_impl / _call_impl around each
// module, native frames down to the dispatcher (--native), mangled kernels.
Profile MakeGpuProfile() {
  ProfileBuilder b;
  b.Metric("gpu_time", "ns", "GPU kernel time");
  b.Metric("wall_time", "ns", "wall time spent in the op itself");
  const std::string site = "/usr/lib/python3/dist-packages/torch/nn/modules/";
  auto thread = b.Add(0, FrameKind::kThread, "main thread");
  auto module = b.Add(thread, FrameKind::kPythonFrame, "<module>",
                      "/home/user/project/experiments/train_resnet.py", 88);
  auto step = b.Add(module, FrameKind::kPythonFrame, "train_step",
                    "/home/user/project/experiments/train_resnet.py", 61);
  auto wrapped = b.Add(step, FrameKind::kPythonFrame,
                       "Module._wrapped_call_impl", site + "module.py", 1511);
  auto call = b.Add(wrapped, FrameKind::kPythonFrame, "Module._call_impl",
                    site + "module.py", 1520);
  auto forward = b.Add(call, FrameKind::kPythonFrame, "ResNet.forward",
                       "/home/user/project/models/resnet.py", 40);
  auto bn_wrapped =
      b.Add(forward, FrameKind::kPythonFrame, "Module._wrapped_call_impl",
            site + "module.py", 1511);
  auto bn_call = b.Add(bn_wrapped, FrameKind::kPythonFrame, "Module._call_impl",
                       site + "module.py", 1520);
  auto bn = b.Add(bn_call, FrameKind::kPythonFrame, "BatchNorm2d.forward",
                  site + "batchnorm.py", 171);
  auto fwd = b.Add(bn, FrameKind::kPhase, "[forward]");
  auto op = b.Add(fwd, FrameKind::kOperator, "aten::batch_norm");
  b.Value(op, "wall_time", 0.4 * kMs);
  auto dispatch =
      b.Add(op, FrameKind::kNativeFrame,
            "c10::Dispatcher::runRecordFunction(at::RecordFunction&, "
            "c10::OperatorHandle const&)");
  auto callbacks = b.Add(dispatch, FrameKind::kNativeFrame,
                         "_ZN2at14RecordFunction17runStartCallbacksEv");
  auto launch = b.Add(callbacks, FrameKind::kGpuApi, "cudaLaunchKernel");
  b.Value(launch, "wall_time", 0.1 * kMs);
  auto add = b.Add(
      launch, FrameKind::kGpuKernel,
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_"
      "addIfEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_");
  b.Value(add, "gpu_time", 12 * kMs, 20);
  auto bwd = b.Add(bn, FrameKind::kPhase, "[backward]");
  auto bn_backward =
      b.Add(bwd, FrameKind::kOperator, "CudnnBatchNormBackward0");
  b.Value(bn_backward, "wall_time", 0.3 * kMs);
  auto kernel =
      b.Add(bn_backward, FrameKind::kGpuKernel,
            "_ZN5cudnn21bn_bw_1C11_kernel_newIffLi512ELb1ELi1EEEvT0_S1_PKT_");
  b.Value(kernel, "gpu_time", 30 * kMs, 20);
  auto mul = b.Add(
      forward, FrameKind::kGpuKernel,
      "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_"
      "nocastINS0_13BinaryFunctorIfffNS0_15binary_internal10MulFunctorIf"
      "EEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_");
  b.Value(mul, "gpu_time", 8 * kMs, 20);
  b.Meta("pid", "5150");
  b.Meta("host", "gpu07");
  b.Meta("command_line", "python3 experiments/train_resnet.py");
  b.Meta("start_time_ns", "1000000000");
  b.Meta("end_time_ns", "3500000000");
  b.Meta("python_version", "3.11.2");
  b.Meta("torch_version", "2.1.0");
  b.Meta("gpu", "CUPTI 12.1, activity tracing of kernels, copies and syncs");
  b.Meta("warning_torch_adapter",
         "the PyTorch adapter did not load: no operators (aten::) in this "
         "profile; fix: apt-get install libtorch-dev");
  return b.profile();
}

// A CPU run whose op CPU time was sampled too rarely to get any value:
// only wall_time has values, and the machine has no NVIDIA driver.
Profile MakeWallTimeOnlyProfile() {
  ProfileBuilder b;
  b.Metric("cpu_time", "ns", "thread CPU time");
  b.Metric("wall_time", "ns", "wall time spent in the op itself");
  auto thread = b.Add(0, FrameKind::kThread, "main thread");
  auto line = b.Add(thread, FrameKind::kPythonFrame, "main",
                    "/home/user/project/tiny.py", 5);
  auto fwd = b.Add(line, FrameKind::kPhase, "[forward]");
  auto op = b.Add(fwd, FrameKind::kOperator, "aten::add");
  b.Value(op, "wall_time", 2 * kMs, 4);
  b.Meta("gpu",
         "no GPU activity recorded: no NVIDIA driver: cannot load libcuda.so.1 "
         "(libcuda.so.1: cannot open shared object file: No such file or "
         "directory)");
  return b.profile();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  // Paths are built with append: GCC 12 at -O3 warns (-Wrestrict, a known
  // false positive) on some string operator+ chains.
  auto path = [dir = std::string(argv[1])](const char* name) {
    std::string result = dir;
    result += '/';
    result += name;
    return result;
  };
  Profile rank0 = deepcontext::analysis::testing::MakeTrainingProfile();
  Profile rank1 = rank0;
  for (auto& [key, value] : rank1.metadata) {
    if (key == "rank") value = std::string("1");
    if (key == "pid") value = std::string("4243");
  }
  Profile no_gpu = rank0;
  no_gpu.metrics.push_back({"gpu_time", "ns", "GPU kernel time"});

  Profile empty_strings;
  empty_strings.strings.resize(4'000'000);
  Profile many_metrics;
  many_metrics.strings.push_back("main thread");
  many_metrics.strings.push_back("f");
  many_metrics.nodes.push_back(
      {0, deepcontext::format::FrameKind::kThread, 1, 0, 0});
  for (uint32_t i = 0; i < 8'000; ++i) {
    many_metrics.metrics.push_back({"m" + std::to_string(i), "count", ""});
    many_metrics.nodes.push_back(
        {1, deepcontext::format::FrameKind::kPythonFrame, 2, 0, i + 1});
    many_metrics.values.push_back({i + 2, i, 1, 1, 1, 1});
  }

  const deepcontext::StatusOr<std::string> encoded_or = EncodeProfile(rank0);
  if (!encoded_or.ok()) {
    std::fprintf(stderr, "%s\n", encoded_or.status().message().c_str());
    return 1;
  }
  const std::string& encoded = *encoded_or;
  bool ok =
      Write(rank0, path("rank0.dctx")) && Write(rank1, path("rank1.dctx")) &&
      Write(no_gpu, path("no_gpu.dctx")) &&
      Write(MakeGpuProfile(), path("gpu_step.dctx")) &&
      Write(MakeWallTimeOnlyProfile(), path("wall_only.dctx")) &&
      Write(deepcontext::analysis::testing::MakeStallProfile(),
            path("gpu_stalls.dctx")) &&
      // Its cubin folder was recorded elsewhere; CMake puts it beside.
      Write(deepcontext::analysis::testing::MakeSassProfile(
                "/recorded/elsewhere/gpu_sass.cubins"),
            path("gpu_sass.dctx")) &&
      // The same for the command without nvdisasm: a folder of its own,
      // which no command with nvdisasm leaves a listing in.
      Write(deepcontext::analysis::testing::MakeSassProfile(
                "/recorded/elsewhere/gpu_sass_bare.cubins"),
            path("gpu_sass_bare.dctx")) &&
      Write(deepcontext::analysis::testing::MakeCounterProfile(),
            path("gpu_counters.dctx")) &&
      WriteBytes("this is not a profile\n", path("foreign.dctx")) &&
      WriteBytes(encoded.substr(0, encoded.size() / 2), path("truncated.dctx")) &&
      Write(empty_strings, path("empty_strings.dctx")) &&
      Write(many_metrics, path("many_metrics.dctx"));
  return ok ? 0 : 1;
}
