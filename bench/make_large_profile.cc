// Writes a synthetic profile with about N calling contexts for the viewer
// benchmark (bench/view_bench.mjs): Python frames nested up to ~40 deep,
// operators and GPU kernels at the leaves, cpu_time everywhere, gpu_time on
// kernels. Deterministic, so runs compare.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "format/dctx_file.h"
#include "format/profile_data.h"

namespace {

using deepcontext::format::FrameKind;
using deepcontext::format::Profile;

Profile MakeProfile(size_t target_nodes) {
  Profile profile;
  profile.metadata = {{"pid", "1"}, {"host", "bench"}, {"rank", "0"}};
  profile.metrics = {{"cpu_time", "ns", "thread CPU time"},
                     {"gpu_time", "ns", "GPU kernel time"},
                     {"calls", "count", "calls"}};
  std::mt19937_64 random(42);
  // Names are shared like real code: a few thousand functions over a few
  // hundred files, operators and kernels from small sets.
  const uint32_t functions = 5000, files = 300, ops = 400, kernels = 800;
  auto add_string = [&](const std::string& text) {
    profile.strings.push_back(text);
    return static_cast<uint32_t>(profile.strings.size() - 1);
  };
  std::vector<uint32_t> function_ids, file_ids, op_ids, kernel_ids;
  for (uint32_t i = 0; i < functions; ++i) function_ids.push_back(add_string("function_" + std::to_string(i)));
  for (uint32_t i = 0; i < files; ++i) file_ids.push_back(add_string("/src/pkg/module_" + std::to_string(i) + ".py"));
  for (uint32_t i = 0; i < ops; ++i) op_ids.push_back(add_string("aten::op_" + std::to_string(i)));
  for (uint32_t i = 0; i < kernels; ++i) kernel_ids.push_back(add_string("kernel_" + std::to_string(i) + "_sm90"));
  uint32_t thread_name = add_string("main thread");

  profile.nodes.push_back({0, FrameKind::kThread, thread_name, 0, 0});
  std::vector<uint32_t> depth = {0, 1};
  // A walk that mostly goes deeper, sometimes climbs back: a deep tree with
  // wide levels, like a training loop's.
  uint32_t current = 1;
  while (profile.nodes.size() < target_nodes) {
    uint32_t parent = current;
    uint64_t roll = random() % 100;
    if (roll < 35 || depth[parent] > 40) {
      // climb a few levels
      for (uint64_t up = random() % 6; up > 0 && parent > 1; --up) {
        parent = profile.nodes[parent].parent;
      }
    }
    FrameKind kind = FrameKind::kPythonFrame;
    uint32_t name = function_ids[random() % functions];
    uint32_t file = file_ids[random() % files];
    uint32_t line = 1 + random() % 800;
    if (depth[parent] > 6 && roll % 7 == 0) {
      kind = FrameKind::kOperator;
      name = op_ids[random() % ops];
      file = 0;
      line = 0;
    }
    if (profile.nodes[parent].kind == FrameKind::kOperator) {
      kind = FrameKind::kGpuKernel;
      name = kernel_ids[random() % kernels];
      file = 0;
      line = 0;
    }
    profile.nodes.push_back({parent, kind, name, file, line});
    uint32_t node = static_cast<uint32_t>(profile.nodes.size() - 1);
    depth.push_back(depth[parent] + 1);
    double cpu = static_cast<double>(1000 + random() % 100000);
    profile.values.push_back({node, 0, 1 + random() % 10, cpu, cpu / 4, cpu});
    if (kind == FrameKind::kGpuKernel) {
      double gpu = static_cast<double>(5000 + random() % 500000);
      profile.values.push_back({node, 1, 1 + random() % 10, gpu, gpu / 4, gpu});
      profile.values.push_back({node, 2, 1, 1, 1, 1});
    }
    current = kind == FrameKind::kGpuKernel ? parent : node;
  }
  return profile;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s NODES OUTPUT.dctx\n", argv[0]);
    return 2;
  }
  size_t nodes = std::strtoull(argv[1], nullptr, 10);
  const deepcontext::Status written =
      deepcontext::format::WriteProfileFile(MakeProfile(nodes), argv[2]);
  if (!written.ok()) {
    std::fprintf(stderr, "%s\n", written.message().c_str());
    return 1;
  }
  return 0;
}
