// Writes a synthetic .dctx profile of a chosen size and shape, for the
// report/export scale benchmark (bench/report_scale.py) and scale tests.
//
//     build/bin/large_profile <shape> <nodes> <out.dctx> [seed]
//
// Shapes:
//   cct        a calling context tree as long runs produce: threads, Python
//              frames, operators, native frames and kernels, 10-40 deep,
//              drawn from a pool of frames much smaller than the tree (as
//              in a program with many distinct call paths), with cpu_time
//              and calls on most nodes and gpu_time on kernels
//   recursion  one function calling itself <nodes> deep, with cpu_time at
//              every level (the worst case of the bottom-up view)
//   metrics    <nodes> nodes under one thread and as many metrics, one value
//              each: small on disk, <nodes>^2 cells if stored densely
//   strings    a root and <nodes> empty strings: a few KB on disk that
//              decompress to 32 bytes of memory per byte if read naively
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "format/dctx_file.h"
#include "format/profile_data.h"

namespace {

namespace fmt = deepcontext::format;

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  fmt::Profile& profile() { return profile_; }

  fmt::StringId Intern(const std::string& text) {
    profile_.strings.push_back(text);
    return static_cast<fmt::StringId>(profile_.strings.size() - 1);
  }

  fmt::MetricId Metric(const std::string& name, const std::string& unit) {
    profile_.metrics.push_back({name, unit, "synthetic " + name});
    return static_cast<fmt::MetricId>(profile_.metrics.size() - 1);
  }

  fmt::NodeId Add(fmt::NodeId parent, fmt::FrameKind kind, fmt::StringId name,
                  fmt::StringId file, uint32_t line) {
    profile_.nodes.push_back(fmt::Node{parent, kind, name, file, line});
    return static_cast<fmt::NodeId>(profile_.nodes.size() - 1);
  }

  void Value(fmt::NodeId node, fmt::MetricId metric, uint64_t count,
             double sum) {
    const double mean = sum / static_cast<double>(count);
    profile_.values.push_back(
        fmt::MetricValue{node, metric, count, sum, mean * 0.5, mean * 1.5});
  }

  uint32_t Uniform(uint32_t n) {
    return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_);
  }

 private:
  std::mt19937_64 rng_;
  fmt::Profile profile_;
};

// A random walk over call depth: each step either calls deeper (a new node
// under the current one) or returns to a random ancestor, like the call
// paths of a long program seen one after another.
void BuildCct(Generator& gen, uint32_t num_nodes) {
  constexpr uint32_t kFiles = 2'000;
  constexpr uint32_t kFunctions = 60'000;
  constexpr uint32_t kOperators = 800;
  constexpr uint32_t kKernels = 3'000;
  constexpr uint32_t kThreads = 8;
  std::vector<fmt::StringId> files, functions, operators, kernels;
  for (uint32_t i = 0; i < kFiles; ++i) {
    files.push_back(gen.Intern("/home/user/project/src/package_" +
                               std::to_string(i % 40) + "/module_" +
                               std::to_string(i) + ".py"));
  }
  for (uint32_t i = 0; i < kFunctions; ++i) {
    functions.push_back(gen.Intern("function_" + std::to_string(i)));
  }
  for (uint32_t i = 0; i < kOperators; ++i) {
    operators.push_back(gen.Intern("aten::op_" + std::to_string(i)));
  }
  for (uint32_t i = 0; i < kKernels; ++i) {
    kernels.push_back(gen.Intern("void kernel_" + std::to_string(i) +
                                 "<float, 128, 4>(Params)"));
  }
  const fmt::MetricId cpu = gen.Metric("cpu_time", "ns");
  const fmt::MetricId calls = gen.Metric("calls", "count");
  const fmt::MetricId gpu = gen.Metric("gpu_time", "ns");

  std::vector<fmt::NodeId> path;
  std::vector<fmt::FrameKind> kinds;
  for (uint32_t t = 0; t < kThreads && gen.profile().nodes.size() < num_nodes;
       ++t) {
    const fmt::NodeId thread =
        gen.Add(0, fmt::FrameKind::kThread,
                gen.Intern("thread " + std::to_string(t)), 0, 0);
    path.assign(1, thread);
    kinds.assign(1, fmt::FrameKind::kThread);
    const size_t budget = num_nodes * (t + 1) / kThreads;
    while (gen.profile().nodes.size() < budget) {
      const fmt::FrameKind above = kinds.back();
      // Python frames call Python or operators; operators call native code,
      // which launches kernels; kernels are leaves.
      fmt::FrameKind kind = fmt::FrameKind::kPythonFrame;
      if (above == fmt::FrameKind::kGpuKernel || path.size() > 40) {
        const size_t keep = 1 + gen.Uniform(static_cast<uint32_t>(path.size()));
        path.resize(keep);
        kinds.resize(keep);
        continue;
      }
      if (above == fmt::FrameKind::kOperator ||
          above == fmt::FrameKind::kNativeFrame) {
        kind = gen.Uniform(3) == 0 ? fmt::FrameKind::kNativeFrame
                                   : fmt::FrameKind::kGpuKernel;
      } else if (path.size() > 8 && gen.Uniform(4) == 0) {
        kind = fmt::FrameKind::kOperator;
      }
      fmt::NodeId node = 0;
      const fmt::NodeId parent = path.back();
      switch (kind) {
        case fmt::FrameKind::kPythonFrame: {
          // A function lives in one file and calls out from a few lines.
          const uint32_t f = gen.Uniform(kFunctions);
          node = gen.Add(parent, kind, functions[f], files[f % kFiles],
                         1 + (f * 37) % 1'500 + 3 * gen.Uniform(8));
          break;
        }
        case fmt::FrameKind::kOperator:
          node =
              gen.Add(parent, kind, operators[gen.Uniform(kOperators)], 0, 0);
          break;
        case fmt::FrameKind::kNativeFrame: {
          const uint32_t f = gen.Uniform(kFunctions);
          node = gen.Add(parent, kind, functions[f], files[f % kFiles],
                         1 + (f * 13) % 5'000);
          break;
        }
        default:
          node = gen.Add(parent, kind, kernels[gen.Uniform(kKernels)], 0, 0);
          break;
      }
      const uint64_t count = 1 + gen.Uniform(1'000);
      if (kind == fmt::FrameKind::kGpuKernel) {
        gen.Value(node, gpu, count, 1'000.0 * count);
      } else if (gen.Uniform(3) != 0) {
        gen.Value(node, cpu, count, 25'000.0 * count);
      }
      gen.Value(node, calls, count, static_cast<double>(count));
      path.push_back(node);
      kinds.push_back(kind);
    }
  }
}

void BuildRecursion(Generator& gen, uint32_t depth) {
  const fmt::MetricId cpu = gen.Metric("cpu_time", "ns");
  const fmt::StringId name = gen.Intern("recurse");
  const fmt::StringId file = gen.Intern("/home/user/deep.py");
  fmt::NodeId node =
      gen.Add(0, fmt::FrameKind::kThread, gen.Intern("main thread"), 0, 0);
  for (uint32_t d = 0; d < depth; ++d) {
    node = gen.Add(node, fmt::FrameKind::kPythonFrame, name, file, 3);
    gen.Value(node, cpu, 1, 1'000);
  }
}

void BuildMetrics(Generator& gen, uint32_t n) {
  const fmt::NodeId thread =
      gen.Add(0, fmt::FrameKind::kThread, gen.Intern("main thread"), 0, 0);
  const fmt::StringId name = gen.Intern("f");
  for (uint32_t i = 0; i < n; ++i) {
    const fmt::MetricId metric = gen.Metric("m" + std::to_string(i), "count");
    const fmt::NodeId node =
        gen.Add(thread, fmt::FrameKind::kPythonFrame, name, 0, i + 1);
    gen.Value(node, metric, 1, 1);
  }
}

void BuildStrings(Generator& gen, uint32_t n) {
  gen.profile().strings.resize(gen.profile().strings.size() + n);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(
        stderr,
        "usage: %s cct|recursion|metrics|strings <nodes> <out.dctx> [seed]\n",
        argv[0]);
    return 2;
  }
  const std::string shape = argv[1];
  char* end = nullptr;
  const unsigned long long nodes = std::strtoull(argv[2], &end, 10);
  if (*end != '\0' || nodes < 1 || nodes > 100'000'000) {
    std::fprintf(stderr, "nodes must be 1 to 100000000, not '%s'\n", argv[2]);
    return 2;
  }
  const uint64_t seed = argc == 5 ? std::strtoull(argv[4], nullptr, 10) : 1;
  Generator gen(seed);
  gen.profile().metadata = {{"command_line", "large_profile " + shape},
                            {"pid", "4242"}};
  const auto n = static_cast<uint32_t>(nodes);
  if (shape == "cct") {
    BuildCct(gen, n);
  } else if (shape == "recursion") {
    BuildRecursion(gen, n);
  } else if (shape == "metrics") {
    BuildMetrics(gen, n);
  } else if (shape == "strings") {
    BuildStrings(gen, n);
  } else {
    std::fprintf(stderr, "unknown shape '%s'\n", shape.c_str());
    return 2;
  }
  const deepcontext::Status written =
      fmt::WriteProfileFile(gen.profile(), argv[3]);
  if (!written.ok()) {
    std::fprintf(stderr, "%s\n", written.message().c_str());
    return 1;
  }
  std::printf("%s: %zu nodes, %zu values, %zu metrics\n", argv[3],
              gen.profile().nodes.size(), gen.profile().values.size(),
              gen.profile().metrics.size());
  return 0;
}
