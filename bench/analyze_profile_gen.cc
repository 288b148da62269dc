// Writes a large synthetic GPU training profile for the analyzer benchmark
// (bench/analyze_bench.py): `analyze_profile_gen OUT.dctx [NODES]` (default
// 1,000,000 nodes). The shape follows what the runtime writes: Python lines
// -> operators ([forward]/[backward]) -> cuLaunchKernel -> kernels with GPU
// time and launch shape, plus syncs and copies, so every rule has work.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "format/dctx_file.h"
#include "format/profile_data.h"

namespace {

using deepcontext::format::FrameKind;
using deepcontext::format::MetricValue;
using deepcontext::format::Node;
using deepcontext::format::NodeId;
using deepcontext::format::Profile;

class Generator {
 public:
  explicit Generator(Profile& profile) : profile_(profile) {
    for (const char* name :
         {"calls", "wall_time", "cpu_time", "gpu_time", "sync_time", "bytes",
          "blocks", "occupancy"}) {
      profile_.metrics.push_back({name, "", ""});
    }
  }

  NodeId Add(NodeId parent, FrameKind kind, const std::string& name,
             uint32_t file = 0, uint32_t line = 0) {
    profile_.strings.push_back(name);
    profile_.nodes.push_back(Node{
        parent, kind,
        static_cast<uint32_t>(profile_.strings.size() - 1), file, line});
    return static_cast<NodeId>(profile_.nodes.size() - 1);
  }

  void Value(NodeId node, uint32_t metric, double sum, uint64_t count) {
    profile_.values.push_back(
        MetricValue{node, metric, count, sum, sum / count, sum / count});
  }

  size_t size() const { return profile_.nodes.size(); }

 private:
  Profile& profile_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT.dctx [NODES]\n", argv[0]);
    return 2;
  }
  size_t target = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000;
  Profile profile;
  profile.metadata = {{"start_time_ns", "1000000000"},
                      {"end_time_ns", "61000000000"},
                      {"gpu0_busy_ns", "20000000000"},
                      {"gpu0_compute_capability", "9.0"},
                      {"gpu0_sm_count", "132"}};
  Generator g(profile);
  profile.strings.push_back("/home/user/model.py");
  const uint32_t file = static_cast<uint32_t>(profile.strings.size() - 1);
  NodeId thread = g.Add(0, FrameKind::kThread, "main thread");
  NodeId module = g.Add(thread, FrameKind::kPythonFrame, "<module>", file, 1);
  const char* kOps[] = {"aten::mul", "aten::add", "aten::tanh", "aten::mm",
                        "aten::item"};
  for (uint32_t layer = 0; g.size() < target; ++layer) {
    // One Python line per layer; each holds a forward and a backward phase
    // with five operators, each launching one kernel.
    NodeId line = g.Add(module, FrameKind::kPythonFrame, "forward", file,
                        10 + layer);
    for (const char* phase : {"[forward]", "[backward]"}) {
      NodeId phase_node = g.Add(line, FrameKind::kPhase, phase);
      for (const char* op_name : kOps) {
        NodeId op = g.Add(phase_node, FrameKind::kOperator, op_name);
        g.Value(op, 0, 10, 10);
        g.Value(op, 1, 10 * 20000.0, 10);
        NodeId api = g.Add(op, FrameKind::kGpuApi, "cuLaunchKernel");
        bool sgemm = std::string(op_name) == "aten::mm";
        NodeId kernel = g.Add(
            api, FrameKind::kGpuKernel,
            sgemm ? "ampere_sgemm_128x64_tn"
                  : "vectorized_elementwise_kernel_" + std::to_string(layer));
        g.Value(kernel, 3, 10 * 3000.0, 10);
        g.Value(kernel, 6, 10 * 64.0, 10);
        g.Value(kernel, 7, 10 * 0.25, 10);
        if (std::string(op_name) == "aten::item") {
          NodeId sync = g.Add(api, FrameKind::kGpuSync, "sync: stream");
          g.Value(sync, 4, 10 * 50000.0, 10);
        }
      }
    }
  }
  const deepcontext::Status written =
      deepcontext::format::WriteProfileFile(profile, argv[1]);
  if (!written.ok()) {
    std::fprintf(stderr, "%s\n", written.message().c_str());
    return 1;
  }
  std::printf("wrote %s: %zu nodes\n", argv[1], profile.nodes.size());
  return 0;
}
