#include "tests/unit/tools/server/view_fixtures.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "format/dctx_file.h"
#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::server::testing {

namespace {

using analysis::testing::ProfileBuilder;
using format::FrameKind;

constexpr const char* kTrainPy =
    "import torch\n"
    "from model import Model\n"
    "\n"
    "\n"
    "def load(batch):\n"
    "    return batch.cuda()\n"
    "\n"
    "\n"
    "def train_step(model, batch):\n"
    "    data = load(batch)\n"
    "    out = model(data)\n"
    "    loss = out.sum()\n"
    "    loss.backward()\n"
    "    return loss\n"
    "\n"
    "\n"
    "def main():\n"
    "    model = Model().cuda()\n"
    "    for step in range(10):\n"
    "        train_step(model, torch.randn(64, 1024))\n"
    "\n"
    "\n"
    "main()\n";

constexpr const char* kModelPy =
    "import torch\n"
    "\n"
    "\n"
    "class Model(torch.nn.Module):\n"
    "    def forward(self, x):\n"
    "        x = self.fc(x)\n"
    "        return torch.relu(x)\n";

bool WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

void Kernel(ProfileBuilder& b, format::NodeId parent, const std::string& name,
            double ns_each, uint64_t launches, double blocks, double threads,
            double registers, double shared, double occupancy, uint64_t untimed = 0) {
  format::NodeId api = b.Add(parent, FrameKind::kGpuApi, "cudaLaunchKernel");
  b.Value(api, "cpu_time", 5e3 * launches, launches);
  format::NodeId kernel = b.Add(api, FrameKind::kGpuKernel, name);
  b.Value(kernel, "gpu_time", ns_each * launches, launches);
  b.Value(kernel, "blocks", blocks * launches, launches);
  b.Value(kernel, "threads_per_block", threads * launches, launches);
  b.Value(kernel, "registers_per_thread", registers * launches, launches);
  b.Value(kernel, "shared_memory_bytes", shared * launches, launches);
  b.Value(kernel, "occupancy", occupancy * launches, launches);
  if (untimed > 0) b.Value(kernel, "gpu_untimed_launches", untimed, untimed);
}

}  // namespace

format::Profile MakeGpuProfile(const std::string& src_dir, bool after) {
  const std::string train = src_dir + "/train.py";
  const std::string model = src_dir + "/model.py";
  ProfileBuilder b;
  b.Metric("cpu_time", "ns", "thread CPU time");
  b.Metric("gpu_time", "ns", "time the GPU spent running the kernel, copy or memset");
  b.Metric("calls", "count", "operator calls");
  b.Metric("bytes", "B", "bytes copied or set");
  b.Metric("gpu_peak_live_bytes", "bytes", "GPU memory live at the peak");
  b.Metric("blocks", "", "thread blocks per kernel launch (grid size)");
  b.Metric("threads_per_block", "", "threads per block (block size)");
  b.Metric("registers_per_thread", "", "registers allocated per thread");
  b.Metric("shared_memory_bytes", "B", "static plus dynamic shared memory per block");
  b.Metric("occupancy", "", "theoretical occupancy");
  b.Metric("gpu_untimed_launches", "", "kernel launches without a GPU time");
  b.Meta("pid", after ? "5002" : "5001");
  b.Meta("host", "gpu01");
  b.Meta("rank", "0");
  format::NodeId thread = b.Add(0, FrameKind::kThread, "main thread");
  format::NodeId module = b.Add(thread, FrameKind::kPythonFrame, "<module>", train, 23);
  format::NodeId main = b.Add(module, FrameKind::kPythonFrame, "main", train, 20);
  format::NodeId step = b.Add(main, FrameKind::kPythonFrame, "train_step", train, 11);
  b.Value(step, "cpu_time", 2e6, 10);
  format::NodeId forward = b.Add(step, FrameKind::kPythonFrame, "forward", model, 6);
  format::NodeId linear = b.Add(forward, FrameKind::kOperator, "aten::linear");
  b.Value(linear, "cpu_time", 8e6, 10);
  b.Value(linear, "calls", 10, 10);
  b.Value(linear, "gpu_peak_live_bytes", 64 << 20, 1);
  Kernel(b, linear, "sm80_xmma_gemm_f32f32_tn", after ? 4e6 : 2e6, 10, 128, 256,
         96, 49152, 0.5);
  format::NodeId relu_line = b.Add(step, FrameKind::kPythonFrame, "forward", model, 7);
  format::NodeId relu = b.Add(relu_line, FrameKind::kOperator, "aten::relu");
  b.Value(relu, "cpu_time", 3e6, 10);
  b.Value(relu, "calls", 10, 10);
  if (after) {
    Kernel(b, relu, "fused_relu_kernel", 3e5, 10, 512, 128, 16, 0, 1.0);
  } else {
    Kernel(b, relu, "vectorized_elementwise_kernel", 6e5, 10, 512, 128, 16, 0,
           1.0);
  }
  format::NodeId backward = b.Add(step, FrameKind::kPythonFrame, "train_step", train, 13);
  format::NodeId mm = b.Add(backward, FrameKind::kOperator, "aten::mm");
  b.Value(mm, "cpu_time", 6e6, 10);
  // Two more launches measured with --gpu-metrics: no GPU time.
  Kernel(b, mm, "sm80_xmma_gemm_f32f32_nn", 3e6, 10, 128, 256, 96, 49152, 0.5, 2);
  format::NodeId load = b.Add(step, FrameKind::kPythonFrame, "train_step", train, 10);
  format::NodeId load_fn = b.Add(load, FrameKind::kPythonFrame, "load", train, 6);
  format::NodeId copy = b.Add(load_fn, FrameKind::kOperator, "aten::copy_");
  b.Value(copy, "cpu_time", 1e6, 10);
  format::NodeId memcpy = b.Add(copy, FrameKind::kGpuMemcpy, "Memcpy HtoD (Pageable -> Device)");
  b.Value(memcpy, "gpu_time", 5e6, 10);
  b.Value(memcpy, "bytes", 10.0 * 64 * 1024 * 4, 10);
  format::NodeId missing = b.Add(step, FrameKind::kPythonFrame, "prefetch",
                                 src_dir + "/missing.py", 3);
  b.Value(missing, "cpu_time", 1e6, 10);
  return b.profile();
}

deepcontext::Status WriteViewFixtures(const std::string& dir) {
  const std::string src = dir + "/src";
  std::filesystem::create_directories(src);
  for (bool after : {false, true}) {
    std::string path = dir + (after ? "/after.dctx" : "/before.dctx");
    deepcontext::Status written =
        format::WriteProfileFile(MakeGpuProfile(src, after), path);
    if (!written.ok()) return written;
  }
  if (!WriteText(dir + "/foreign.dctx", "this is not a profile\n") ||
      !WriteText(src + "/train.py", kTrainPy) ||
      !WriteText(src + "/model.py", kModelPy) ||
      !WriteText(dir + "/secret.txt", "secret\n")) {
    return deepcontext::Status::Error("cannot write the fixtures under " + dir);
  }
  std::filesystem::remove(src + "/link.py");
  if (::symlink("../secret.txt", (src + "/link.py").c_str()) != 0) {
    return deepcontext::Status::Error("cannot create " + src + "/link.py");
  }
  return deepcontext::Status::Ok();
}

}  // namespace deepcontext::server::testing
