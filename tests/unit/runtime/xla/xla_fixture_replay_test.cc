// Checks where the GPU time of recorded JAX 0.11.2 training steps lands
// (xla_fixture_replay.h replays them).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/runtime/xla/xla_fixture_replay.h"

namespace deepcontext::xla::replay {
namespace {

using gpu::GpuMetric;

TEST(XlaFixtureReplay, GraphKernelsLandUnderTheirHloOperations) {
  const auto events = ReadFixture("train_step_graphs.jsonl.gz");
  ASSERT_GT(events.size(), 1000u);
  Replay replay(events, PythonThread(events));
  std::map<std::vector<std::string>, double> elsewhere;
  const auto by_path = replay.TimeUnderLine(&elsewhere);

  // Every CUDA-graph kernel (the steps after the first) sits below an HLO
  // operation recorded into the command buffer, not below the launch.
  double graph_time = 0;
  for (const auto& [path, t] : by_path) {
    if (Contains(path, "cuGraphAddNode_v2")) graph_time += t;
    EXPECT_FALSE(Contains(path, "cuGraphLaunch")) << path.back();
  }
  const double recorded = KernelTime(replay.kernels, true);
  ASSERT_GT(recorded, 0);
  EXPECT_DOUBLE_EQ(graph_time, recorded);

  // The backward GEMM of layer 2, by the kernel XLA named after it.
  const ContextId gemm = replay.sink.Find(
      kLine, {"[backward]", "layer2", "dot_general", "gemm_fusion_dot.6", "cuGraphAddNode_v2",
              "gemm_fusion_dot_6"});
  ASSERT_NE(gemm, 0u);
  // Every step: the first records the command buffer, then launches it.
  EXPECT_EQ(replay.sink.Get(gemm, GpuMetric::kGpuTime).count, 4u);
  // And a forward one.
  EXPECT_NE(replay.sink.Find(kLine, {"[forward]", "layer0", "dot_general", "gemm_fusion_dot.3",
                                     "cuGraphAddNode_v2", "gemm_fusion_dot_3"}),
            0u);
}

TEST(XlaFixtureReplay, LaunchedKernelsLandUnderTheirHloOperations) {
  const auto events = ReadFixture("train_step_no_graphs.jsonl.gz");
  ASSERT_GT(events.size(), 1000u);
  Replay replay(events, PythonThread(events));
  std::map<std::vector<std::string>, double> elsewhere;
  const auto by_path = replay.TimeUnderLine(&elsewhere);
  // train_step's steady state: its kernels under [forward]/[backward] paths.
  double forward = 0, backward = 0;
  for (const auto& [path, t] : by_path) {
    if (!path.empty() && path[0] == "[forward]") forward += t;
    if (!path.empty() && path[0] == "[backward]") backward += t;
  }
  EXPECT_GT(forward, 0);
  EXPECT_GT(backward, 0);
  const ContextId gemm = replay.sink.Find(
      kLine, {"[backward]", "layer1", "dot_general", "gemm_fusion_dot.7", "cuLaunchKernelEx",
              "gemm_fusion_dot_6"});
  ASSERT_NE(gemm, 0u);
  EXPECT_EQ(replay.sink.Get(gemm, GpuMetric::kGpuTime).count, 4u);  // every step
}

TEST(XlaFixtureReplay, GraphKernelsLandUnderTheSourceLinesOfTheirOperation) {
  const auto events = ReadFixture("train_step_graphs.jsonl.gz");
  std::ifstream in(std::string(XLA_FIXTURE_DIR) + "/hlo_train_step.txt");
  std::stringstream hlo;
  hlo << in.rdbuf();
  Replay replay(events, PythonThread(events), hlo.str());
  // train_step:41 value_and_grad -> mlp_loss:36 -> mlp_forward:31 x @ w.
  const ContextId gemm = replay.sink.Find(
      kLine, {"[forward]", "train_step", "mlp_loss", "mlp_forward", "layer0", "dot_general",
              "gemm_fusion_dot.3", "cuGraphAddNode_v2", "gemm_fusion_dot_3"});
  ASSERT_NE(gemm, 0u);
  EXPECT_EQ(replay.sink.Get(gemm, GpuMetric::kGpuTime).count, 4u);
  // Share of the command buffers' kernel time below a source line.
  std::map<std::vector<std::string>, double> elsewhere;
  double with_line = 0, graph_time = 0;
  for (const auto& [path, t] : replay.TimeUnderLine(&elsewhere)) {
    if (!Contains(path, "cuGraphAddNode_v2")) continue;
    graph_time += t;
    if (Contains(path, "train_step")) with_line += t;
  }
  ASSERT_GT(graph_time, 0);
  EXPECT_GE(with_line / graph_time, 0.95);  // the target; 1.0 here
}

// The correlation ids of the Python thread's graph launches, in order.
std::vector<uint64_t> GraphLaunches(const std::vector<json>& events, uint64_t python_thread) {
  std::vector<uint64_t> launches;
  for (const json& e : events) {
    if (e["ev"] == "api" && e["tid"] == python_thread &&
        e["fn"].get<std::string>().rfind("cuGraphLaunch", 0) == 0) {
      launches.push_back(e["corr"]);
    }
  }
  return launches;
}

// GPU time (ns) of the graph records (kernels, copies, memsets) of the
// launches with these correlation ids.
double GraphTimeOf(const std::vector<json>& events, const std::vector<uint64_t>& launches) {
  double total = 0;
  for (const json& e : events) {
    const std::string ev = e["ev"];
    if ((ev != "kernel" && ev != "memcpy" && ev != "memset") || e["node"] == 0) continue;
    if (std::find(launches.begin(), launches.end(), e["corr"].get<uint64_t>()) ==
        launches.end()) {
      continue;
    }
    total += static_cast<double>(e["end"].get<uint64_t>() - e["start"].get<uint64_t>());
  }
  return total;
}

// A training loop: the first call (which compiles, records the command
// buffer and launches it) comes from one line, the later ones, which only
// launch it, from another. Their kernels go under the line that launched
// them, each still below its source lines and HLO instruction.
TEST(XlaFixtureReplay, ReplaysOfACommandBufferLandUnderTheCallThatLaunchedThem) {
  const auto events = ReadFixture("train_step_graphs.jsonl.gz");
  std::ifstream in(std::string(XLA_FIXTURE_DIR) + "/hlo_train_step.txt");
  std::stringstream hlo;
  hlo << in.rdbuf();
  const uint64_t python = PythonThread(events);
  Replay replay(events, python, hlo.str(), {"jit_train_step", 2});
  const std::vector<std::string> gemm_path = {
      "[forward]", "train_step", "mlp_loss", "mlp_forward", "layer0", "dot_general",
      "gemm_fusion_dot.3", "cuGraphAddNode_v2", "gemm_fusion_dot_3"};
  const ContextId recorded = replay.sink.Find(kLine, gemm_path);
  const ContextId replayed = replay.sink.Find(kLoopLine, gemm_path);
  ASSERT_NE(recorded, 0u);
  ASSERT_NE(replayed, 0u);
  EXPECT_EQ(replay.sink.Get(recorded, GpuMetric::kGpuTime).count, 1u);  // the first call
  EXPECT_EQ(replay.sink.Get(replayed, GpuMetric::kGpuTime).count, 3u);  // the loop's

  const std::vector<uint64_t> launches = GraphLaunches(events, python);
  ASSERT_EQ(launches.size(), 4u);
  const double loop_graph_time =
      GraphTimeOf(events, std::vector<uint64_t>(launches.begin() + 1, launches.end()));
  ASSERT_GT(loop_graph_time, 0);
  std::map<std::vector<std::string>, double> elsewhere;
  double loop_time = 0, loop_with_line = 0;
  for (const auto& [path, t] : replay.TimeUnderLine(&elsewhere, kLoopLine)) {
    EXPECT_FALSE(Contains(path, "cuGraphLaunch")) << path.back();
    EXPECT_TRUE(Contains(path, "cuGraphAddNode_v2")) << path.back();
    loop_time += t;
    if (Contains(path, "train_step")) loop_with_line += t;
  }
  EXPECT_DOUBLE_EQ(loop_time, loop_graph_time);
  EXPECT_DOUBLE_EQ(loop_with_line, loop_time);
  // The first call's launch stays exactly where its nodes were recorded.
  double first_graph_time = 0;
  for (const auto& [path, t] : replay.TimeUnderLine(&elsewhere)) {
    if (Contains(path, "cuGraphAddNode_v2")) first_graph_time += t;
  }
  EXPECT_DOUBLE_EQ(first_graph_time, GraphTimeOf(events, {launches[0]}));
}

TEST(XlaFixtureReplay, CompilerThreadsKernelsGoToTheCompilePhase) {
  const auto events = ReadFixture("train_step_graphs.jsonl.gz");
  Replay replay(events, PythonThread(events));
  std::map<std::vector<std::string>, double> elsewhere;
  const auto by_path = replay.TimeUnderLine(&elsewhere);
  double compile = 0, total = 0;
  for (const auto& [path, t] : by_path) {
    total += t;
    if (!path.empty() && path[0] == "[compile]") compile += t;
  }
  // Autotuning (candidate GEMMs, redzone checks) ran on XLA's threads: none
  // of it is left on those threads' own nodes. What stays there are the
  // copies of PJRT's transfer threads (device_put, fetching the loss).
  for (const auto& [path, t] : elsewhere) {
    ASSERT_FALSE(path.empty());
    EXPECT_EQ(path.back().rfind("memcpy", 0), 0u) << path.back();
  }
  EXPECT_GT(compile, 0);
  EXPECT_NE(replay.sink.Find(kLine, {"[compile]", "jit_train_step"}), 0u);
  double copies = 0;
  for (const auto& [path, t] : elsewhere) copies += t;
  EXPECT_DOUBLE_EQ(total + copies, replay.sink.Total(GpuMetric::kGpuTime).sum);
  EXPECT_LT(copies, 0.001 * total);
}

#ifdef XLA_TEST_HAVE_CUPTI
// The attention training step of bench/workloads/jax_models.py: its cuBLAS
// GEMMs are traced into the command buffer (stream capture inside each
// custom-call's range, then a child graph node), and their records carry
// node ids of the executable graph's child graphs, which CUPTI never
// announces. Linked at instantiation, they land under their custom-call.
TEST(XlaFixtureReplay, TracedCommandsOfACommandBufferLandUnderTheirHloOperations) {
  const auto events = ReadFixture("attention_step.jsonl.gz");
  ASSERT_GT(events.size(), 5000u);
  Replay replay(events, PythonThread(events));
  // 77 child graph nodes: a GEMM each, 24 of them with a memset first.
  EXPECT_EQ(replay.linked_child_nodes, 101u);
  // Time left below the graph launch (no operation), and the GEMMs' time
  // below an instruction: custom-call.N or cublas-lt-matmul.N, then the
  // capturing cuLaunchKernelEx.
  std::map<std::vector<std::string>, double> elsewhere;
  double unplaced = 0, gemms_under_op = 0;
  for (const auto& [path, t] : replay.TimeUnderLine(&elsewhere)) {
    if (Contains(path, "cuGraphLaunch")) unplaced += t;
    if (path.size() < 3 || path[0] == "[compile]" ||
        path.back().rfind("sm90_xmma_gemm", 0) != 0) {
      continue;
    }
    const std::string& instruction = path[path.size() - 3];
    if (instruction.rfind("custom-call.", 0) == 0 ||
        instruction.rfind("cublas-lt-matmul.", 0) == 0) {
      gemms_under_op += t;
    }
  }
  double graph_gemms = 0;
  for (const json& k : replay.kernels) {
    if (k["graph"] == 0 || k["name"].get<std::string>().rfind("sm90_xmma_gemm", 0) != 0) continue;
    graph_gemms += static_cast<double>(k["end"].get<uint64_t>() - k["start"].get<uint64_t>());
  }
  ASSERT_GT(graph_gemms, 0);
  EXPECT_EQ(unplaced, 0);
  EXPECT_DOUBLE_EQ(gemms_under_op, graph_gemms);
}

// The attention step's later calls from another line: its recorded nodes
// and the traced GEMMs linked into child graphs follow the launching call.
TEST(XlaFixtureReplay, TracedCommandsOfReplaysLandUnderTheCallThatLaunchedThem) {
  const auto events = ReadFixture("attention_step.jsonl.gz");
  const uint64_t python = PythonThread(events);
  Replay replay(events, python, "", {"jit_step", 2});
  const std::vector<uint64_t> launches = GraphLaunches(events, python);
  ASSERT_EQ(launches.size(), 5u);
  const double loop_graph_time =
      GraphTimeOf(events, std::vector<uint64_t>(launches.begin() + 1, launches.end()));
  std::map<std::vector<std::string>, double> elsewhere;
  double loop_time = 0, gemms_under_op = 0;
  for (const auto& [path, t] : replay.TimeUnderLine(&elsewhere, kLoopLine)) {
    EXPECT_FALSE(Contains(path, "cuGraphLaunch")) << path.back();
    loop_time += t;
    if (path.size() < 3 || path.back().rfind("sm90_xmma_gemm", 0) != 0) continue;
    const std::string& instruction = path[path.size() - 3];
    EXPECT_TRUE(instruction.rfind("custom-call.", 0) == 0 ||
                instruction.rfind("cublas-lt-matmul.", 0) == 0)
        << instruction;
    gemms_under_op += t;
  }
  ASSERT_GT(loop_graph_time, 0);
  EXPECT_DOUBLE_EQ(loop_time, loop_graph_time);
  // 4 launches of 77 traced GEMMs each.
  double loop_gemms = 0;
  size_t gemm_records = 0;
  for (const json& k : replay.kernels) {
    if (k["graph"] == 0 || k["name"].get<std::string>().rfind("sm90_xmma_gemm", 0) != 0 ||
        k["corr"] == launches[0]) {
      continue;
    }
    loop_gemms += static_cast<double>(k["end"].get<uint64_t>() - k["start"].get<uint64_t>());
    ++gemm_records;
  }
  EXPECT_EQ(gemm_records, 4u * 77u);
  EXPECT_DOUBLE_EQ(gemms_under_op, loop_gemms);
}
#endif

}  // namespace
}  // namespace deepcontext::xla::replay
