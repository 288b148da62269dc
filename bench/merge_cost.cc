// Cost of `deepcontext merge` on a large job: writes R generated rank
// profiles the size of a ResNet-50 training profile, then merges them the
// way the command does (one file at a time) and reports the time and the
// memory it took.
//
//     build/bin/merge_cost [ranks (64)] [layers (161)] [steps (12)]
//
// Each rank's tree: a main thread with <module> -> train -> step k (steps
// distinct call sites) -> ResNet.forward -> layer i (layers) -> Module
// forward -> 4 nested aten ops -> cudaLaunchKernel -> 2 kernels, and an
// autograd thread with each layer's backward op, 3 aten ops and 2 kernels;
// with the defaults about 20,000 contexts and 4 metrics (calls, wall_time,
// cpu_time, gpu_time). Every rank differs in its values and in a few
// contexts of its own. The goal (issue 21) is 64 ranks merged in < 10 s.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "format/dctx_file.h"
#include "format/profile_data.h"
#include "tools/merge/merge_files.h"

namespace {

using deepcontext::format::FrameKind;
using deepcontext::format::MetricValue;
using deepcontext::format::NodeId;
using deepcontext::format::Profile;
using deepcontext::format::StringId;

class Generator {
 public:
  explicit Generator(int rank) : rng_(static_cast<unsigned>(rank) + 1) {
    profile_.metrics = {{"calls", "count", ""},
                        {"wall_time", "ns", ""},
                        {"cpu_time", "ns", ""},
                        {"gpu_time", "ns", ""}};
    profile_.metadata = {{"rank", std::to_string(rank)},
                         {"pid", std::to_string(1000 + rank)},
                         {"host", "node" + std::to_string(rank / 8)}};
  }

  NodeId Add(NodeId parent, FrameKind kind, const std::string& name,
             const std::string& file = "", uint32_t line = 0) {
    profile_.nodes.push_back({parent, kind, Intern(name), Intern(file), line});
    return static_cast<NodeId>(profile_.nodes.size() - 1);
  }

  void Time(NodeId node, uint32_t metric, double mean) {
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    double sum = mean * jitter(rng_);
    profile_.values.push_back(MetricValue{node, metric, 10, sum, sum / 20, sum / 5});
  }

  Profile Take() { return std::move(profile_); }

 private:
  StringId Intern(const std::string& text) {
    for (StringId i = static_cast<StringId>(profile_.strings.size()); i-- > 0;) {
      if (i + 64 < profile_.strings.size()) break;  // recent strings only
      if (profile_.strings[i] == text) return i;
    }
    profile_.strings.push_back(text);
    return static_cast<StringId>(profile_.strings.size() - 1);
  }

  std::mt19937 rng_;
  Profile profile_;
};

Profile RankProfile(int rank, int layers, int steps) {
  Generator g(rank);
  const std::string train = "/home/user/resnet/train.py";
  const std::string torch_nn = "/usr/lib/python3/dist-packages/torch/nn/modules/";
  NodeId main = g.Add(0, FrameKind::kThread, "main thread");
  NodeId module = g.Add(main, FrameKind::kPythonFrame, "<module>", train, 200);
  NodeId train_fn = g.Add(module, FrameKind::kPythonFrame, "train", train, 150);
  for (int step = 0; step < steps; ++step) {
    NodeId call = g.Add(train_fn, FrameKind::kPythonFrame, "step", train,
                        static_cast<uint32_t>(100 + step));
    NodeId net = g.Add(call, FrameKind::kPythonFrame, "ResNet.forward",
                       "/home/user/resnet/model.py", 60);
    for (int layer = 0; layer < layers; ++layer) {
      NodeId layer_frame = g.Add(net, FrameKind::kPythonFrame, "Bottleneck.forward",
                                 "/home/user/resnet/model.py",
                                 static_cast<uint32_t>(1000 + layer));
      NodeId forward = g.Add(layer_frame, FrameKind::kPythonFrame,
                             "Conv2d.forward", torch_nn + "conv.py", 463);
      NodeId op = g.Add(forward, FrameKind::kOperator, "aten::conv2d");
      g.Time(op, 0, 10);
      g.Time(op, 1, 2e4);
      for (const char* inner : {"aten::convolution", "aten::_convolution",
                                "aten::cudnn_convolution"}) {
        op = g.Add(op, FrameKind::kOperator, inner);
        g.Time(op, 1, 1e4);
        g.Time(op, 2, 9e3);
      }
      NodeId api = g.Add(op, FrameKind::kGpuApi, "cudaLaunchKernel");
      g.Time(api, 1, 4e3);
      for (const char* kernel : {"sm90_xmma_fprop_implicit_gemm",
                                 "cudnn::winograd_nonfused::output"}) {
        g.Time(g.Add(api, FrameKind::kGpuKernel, kernel), 3, 5e4);
      }
    }
  }
  NodeId autograd = g.Add(0, FrameKind::kThread, "thread 4242 (pt_autograd_0)");
  for (int layer = 0; layer < layers; ++layer) {
    NodeId op = g.Add(autograd, FrameKind::kOperator,
                      "ConvolutionBackward" + std::to_string(layer));
    g.Time(op, 1, 3e4);
    for (const char* inner : {"aten::convolution_backward",
                              "aten::cudnn_convolution_backward_input",
                              "aten::cudnn_convolution_backward_weight"}) {
      NodeId child = g.Add(op, FrameKind::kOperator, inner);
      g.Time(child, 1, 1e4);
      for (const char* kernel : {"dgrad_kernel", "wgrad_kernel"}) {
        g.Time(g.Add(child, FrameKind::kGpuKernel, kernel), 3, 4e4);
      }
    }
  }
  // A few contexts only this rank has (uneven data, rank-specific code).
  NodeId own = g.Add(train_fn, FrameKind::kPythonFrame, "log_rank", train,
                     static_cast<uint32_t>(5000 + rank));
  g.Time(g.Add(own, FrameKind::kOperator, "aten::item"), 1, 1e3);
  return g.Take();
}

double PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  const int ranks = argc > 1 ? std::atoi(argv[1]) : 64;
  const int layers = argc > 2 ? std::atoi(argv[2]) : 161;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 12;
  if (ranks < 1 || layers < 1 || steps < 1) {
    std::fprintf(stderr, "usage: merge_cost [ranks >= 1] [layers >= 1] [steps >= 1]\n");
    return 2;
  }
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() /
                       ("dc_merge_cost." + std::to_string(getpid()));
  fs::create_directories(dir);
  std::vector<std::string> paths;
  size_t nodes = 0, values = 0;
  uintmax_t bytes = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    Profile profile = RankProfile(rank, layers, steps);
    nodes = profile.nodes.size();
    values = profile.values.size();
    paths.push_back((dir / ("rank" + std::to_string(rank) + ".dctx")).string());
    if (deepcontext::Status written =
            deepcontext::format::WriteProfileFile(profile, paths.back());
        !written.ok()) {
      std::fprintf(stderr, "%s\n", written.message().c_str());
      fs::remove_all(dir);
      return 1;
    }
    bytes += fs::file_size(paths.back());
  }
  // One decoded input, for the memory comparison below.
  const double one_input_mib =
      static_cast<double>(nodes * sizeof(deepcontext::format::Node) +
                          values * sizeof(MetricValue)) / (1 << 20);
  const double rss_before = PeakRssMiB();
  const auto start = std::chrono::steady_clock::now();
  auto merged = deepcontext::merge::MergeProfileFiles(
      paths, (dir / "job.dctx").string());
  const double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start).count();
  const double rss_after = PeakRssMiB();
  const uintmax_t merged_bytes =
      merged.ok() ? fs::file_size(dir / "job.dctx") : 0;
  fs::remove_all(dir);
  if (!merged.ok()) {
    std::fprintf(stderr, "%s\n", merged.status().message().c_str());
    return 1;
  }
  std::printf("inputs: %d ranks x %zu contexts, %zu values (%.1f MiB of files)\n",
              ranks, nodes, values, static_cast<double>(bytes) / (1 << 20));
  std::printf("merged: %zu contexts, %.1f MiB file\n", merged->contexts,
              static_cast<double>(merged_bytes) / (1 << 20));
  std::printf("merge time: %.2f s (goal < 10 s: %.2fx of it)\n", seconds,
              seconds / 10.0);
  std::printf("peak RSS: %.0f MiB before the merge, %.0f MiB after "
              "(+%.0f MiB; all inputs decoded at once would be >= %.0f MiB)\n",
              rss_before, rss_after, rss_after - rss_before,
              one_input_mib * ranks);
  return 0;
}
