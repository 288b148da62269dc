#include "runtime/xla/replay_contexts.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/xla/xla_ranges.h"
#include "tests/unit/runtime/gpu/fake_context_sink.h"

namespace deepcontext::xla {
namespace {

using gpu::ContextId;
using gpu::FakeContextSink;

// Test contexts: Python lines of the calls (2: the first call, which
// records; 3: a loop's call), 100..: compiler threads' own nodes.
constexpr ContextId kFirstCall = 2;
constexpr ContextId kLoopCall = 3;
constexpr ContextId kWorker = 100;
bool IsWorker(ContextId context) { return context >= 100 && context < 1000; }
constexpr uint64_t kTsl = 0x10;

const std::vector<std::string> kGemm = {"[backward]", "step", "layer2", "dot_general",
                                        "gemm_fusion_dot.6"};

class ReplayContextsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ranges.OnDomainCreated(kTsl, "TSL");
    HloSources module;
    module.module = "jit_step";
    module.frames["gemm_fusion_dot.6"] = {{"train.py", "step", 41}};
    sources.Add(module);
  }
  // The context of a graph node XLA adds while recording the GEMM's
  // command, on the thread whose Python context is `line`.
  ContextId RecordedNode(ContextId line) {
    ranges.Push(kTsl, "XlaModule:#hlo_module=jit_step,program_id=5#");
    ranges.Push(kTsl,
                "Thunk:#name=jit(step)/transpose(jvp(layer2))/dot_general,"
                "hlo_op=gemm_fusion_dot.6#");
    const ContextId node = ranges.Refine(line);
    ranges.Pop(kTsl);
    ranges.Pop(kTsl);
    return node;
  }
  // The context of a cuGraphLaunch of the command buffer from `line`.
  ContextId Launch(ContextId line) {
    ranges.Push(kTsl, "XlaModule:#hlo_module=jit_step,program_id=5#");
    ranges.Push(kTsl, "Thunk:#hlo_op=command_buffer_1#");
    const ContextId launch = ranges.Refine(line);
    ranges.Pop(kTsl);
    ranges.Pop(kTsl);
    return launch;
  }

  FakeContextSink sink;
  HloSourceRegistry sources;
  XlaRanges ranges{sink, &IsWorker, sources};
};

TEST_F(ReplayContextsTest, ANodeReplayedByAnotherCallGoesUnderThatCall) {
  const ContextId node = RecordedNode(kFirstCall);
  ASSERT_EQ(node, sink.Find(kFirstCall, kGemm));
  const ContextId moved = ranges.PlaceReplayed(node, Launch(kLoopCall));
  EXPECT_NE(moved, node);
  // Phase, source line, scope, primitive and instruction, below the loop.
  EXPECT_EQ(moved, sink.Find(kLoopCall, kGemm));
  EXPECT_EQ(sink.NodeOf(sink.Find(kLoopCall, {"[backward]", "step"})).kind,
            gpu::GpuNodeKind::kPython);
  EXPECT_EQ(ranges.replayed_records_moved(), 1u);
  // Every record of it (the cached answer).
  EXPECT_EQ(ranges.PlaceReplayed(node, Launch(kLoopCall)), moved);
  EXPECT_EQ(ranges.replayed_records_moved(), 2u);
}

TEST_F(ReplayContextsTest, ANodeLaunchedByTheCallThatRecordedItStays) {
  const ContextId node = RecordedNode(kFirstCall);
  EXPECT_EQ(ranges.PlaceReplayed(node, Launch(kFirstCall)), node);
  EXPECT_EQ(ranges.replayed_records_moved(), 0u);
}

TEST_F(ReplayContextsTest, NodesAndLaunchesOutsideXlaRangesStay) {
  // A graph captured by other code (PyTorch) at line 2, launched by line 3
  // inside or outside XLA's ranges: its node's context was not refined.
  EXPECT_EQ(ranges.PlaceReplayed(kFirstCall, Launch(kLoopCall)), kFirstCall);
  EXPECT_EQ(ranges.PlaceReplayed(kFirstCall, kLoopCall), kFirstCall);
  // A recorded node launched outside any range.
  const ContextId node = RecordedNode(kFirstCall);
  EXPECT_EQ(ranges.PlaceReplayed(node, kLoopCall), node);
  EXPECT_EQ(ranges.replayed_records_moved(), 0u);
}

TEST_F(ReplayContextsTest, ALaunchFromOneOfXlasThreadsLeavesTheNodeOnItsLine) {
  const ContextId node = RecordedNode(kFirstCall);
  EXPECT_EQ(ranges.PlaceReplayed(node, Launch(kWorker)), node);
  // The other way round, a recording by such a thread goes to the line.
  const ContextId worker_node = RecordedNode(kWorker);
  const ContextId moved = ranges.PlaceReplayed(worker_node, Launch(kLoopCall));
  EXPECT_NE(moved, worker_node);
  EXPECT_EQ(moved, sink.Find(kLoopCall, kGemm));
}

TEST_F(ReplayContextsTest, CompilationWorkStaysInItsCompilePhase) {
  ranges.Push(kTsl, "XlaCompile:#module=jit_step#");
  const ContextId compiling = ranges.Refine(kFirstCall);
  ranges.Pop(kTsl);
  ASSERT_EQ(compiling, sink.Find(kFirstCall, {"[compile]", "jit_step"}));
  EXPECT_EQ(ranges.PlaceReplayed(compiling, Launch(kLoopCall)), compiling);
}

TEST(ReplayContexts, RemembersABoundedNumberOfContextsAndAnswersEveryPair) {
  FakeContextSink sink;
  ReplayContexts replays(sink);
  static const std::vector<PathNode> kPath = {{gpu::GpuNodeKind::kOperator, "op"}};
  static const std::vector<PathNode> kLaunchPath = {
      {gpu::GpuNodeKind::kOperator, "command_buffer_1"}};
  // Context ids of a test's own (the sink's start at 1000).
  constexpr ContextId kLaunchA = 500'000, kLaunchB = 500'001;
  replays.Remember(kLaunchA, kFirstCall, &kLaunchPath);
  replays.Remember(kLaunchB, kLoopCall, &kLaunchPath);
  for (ContextId node = 600'000; replays.remembered() < ReplayContexts::kMaxRemembered; ++node) {
    replays.Remember(node, kFirstCall, &kPath);
  }
  replays.Remember(900'000, kFirstCall, &kPath);  // one too many: not kept
  EXPECT_EQ(replays.remembered(), ReplayContexts::kMaxRemembered);
  EXPECT_EQ(replays.Place(900'000, kLaunchB), 900'000u);
  // More pairs than the cache has slots: each answer stays right.
  const ContextId moved = replays.Place(600'000, kLaunchB);
  ASSERT_NE(moved, 0u);
  ASSERT_EQ(moved, sink.Find(kLoopCall, {"op"}));
  for (int round = 0; round < 2; ++round) {
    for (ContextId node = 600'000; node < 610'000; ++node) {
      ASSERT_EQ(replays.Place(node, kLaunchA), node);
      ASSERT_EQ(replays.Place(node, kLaunchB), moved);
    }
  }
  EXPECT_EQ(replays.moved(), 20'001u);
}

}  // namespace
}  // namespace deepcontext::xla
