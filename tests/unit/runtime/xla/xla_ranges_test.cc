#include "runtime/xla/xla_ranges.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/runtime/gpu/fake_context_sink.h"

namespace deepcontext::xla {
namespace {

using gpu::ContextId;
using gpu::FakeContextSink;

// Test contexts: 2 = a Python line, 100.. = compiler threads' own nodes.
constexpr ContextId kLine = 2;
constexpr ContextId kWorker = 100;
bool IsWorker(ContextId context) { return context >= 100 && context < 1000; }

constexpr uint64_t kTsl = 0x10;
constexpr uint64_t kOtherDomain = 0x20;

class XlaRangesTest : public ::testing::Test {
 protected:
  FakeContextSink sink;
  XlaRanges ranges{sink, &IsWorker};
  void SetUp() override { ranges.OnDomainCreated(kTsl, "TSL"); }
};

TEST_F(XlaRangesTest, NoRangesLeaveTheContext) {
  EXPECT_FALSE(ranges.seen_ranges());
  EXPECT_EQ(ranges.Refine(kLine), kLine);
}

TEST_F(XlaRangesTest, ThunkRangePlacesTheCallUnderItsOperation) {
  ranges.Push(kTsl, "XlaModule:#hlo_module=jit_step,program_id=5#");
  ranges.Push(kTsl, "Thunk:#name=jit(step)/jvp(layer0)/dot_general,hlo_op=gemm_fusion_dot.3#");
  const ContextId op = ranges.Refine(kLine);
  EXPECT_EQ(op, sink.Find(kLine, {"[forward]", "layer0", "dot_general", "gemm_fusion_dot.3"}));
  EXPECT_NE(op, 0u);
  EXPECT_EQ(ranges.op_ranges(), 1u);
  ranges.Pop(kTsl);
  // Inside the module only (between thunks): the line itself.
  EXPECT_EQ(ranges.Refine(kLine), kLine);
  ranges.Pop(kTsl);
  EXPECT_EQ(ranges.Refine(kLine), kLine);
}

TEST_F(XlaRangesTest, RegisteredStringsResolveAndUnknownHandlesStayBalanced) {
  ranges.OnStringRegistered(0x1000, "Thunk:#name=jit(f)/tanh,hlo_op=wrapped_tanh#");
  ranges.PushRegistered(kTsl, 0x2000);  // registered before tracing began
  ranges.PushRegistered(kTsl, 0x1000);
  {
    const ContextId refined = ranges.Refine(kLine);
    EXPECT_EQ(refined, sink.Find(kLine, {"tanh", "wrapped_tanh"}));
  }
  ranges.Pop(kTsl);
  EXPECT_EQ(ranges.Refine(kLine), kLine);
  ranges.Pop(kTsl);
  ranges.Pop(kTsl);  // more pops than pushes: ignored
  EXPECT_EQ(ranges.Refine(kLine), kLine);
}

TEST_F(XlaRangesTest, InnermostThunkOfACommandBufferWins) {
  ranges.Push(kTsl, "Thunk:#hlo_op=command_buffer_1#");
  {
    const ContextId refined = ranges.Refine(kLine);
    EXPECT_EQ(refined, sink.Find(kLine, {"command_buffer_1"}));
  }
  ranges.Push(kTsl, "Thunk:#name=jit(f)/transpose(jvp(l))/dot_general,hlo_op=gemm_fusion_dot.6#");
  {
    const ContextId refined = ranges.Refine(kLine);
    EXPECT_EQ(refined, sink.Find(kLine, {"[backward]", "l", "dot_general", "gemm_fusion_dot.6"}));
  }
}

TEST_F(XlaRangesTest, OtherDomainsAreIgnoredOnceTslIsKnown) {
  ranges.Push(kOtherDomain, "Thunk:#hlo_op=not_xla#");
  EXPECT_EQ(ranges.Refine(kLine), kLine);
  ranges.Push(kTsl, "Thunk:#hlo_op=loop_add_fusion#");
  ranges.Pop(kOtherDomain);  // not XLA's: the thunk stays open
  {
    const ContextId refined = ranges.Refine(kLine);
    EXPECT_EQ(refined, sink.Find(kLine, {"loop_add_fusion"}));
  }
}

TEST_F(XlaRangesTest, CompilationOnTheCallingThreadIsItsCompilePhase) {
  EXPECT_TRUE(ranges.Push(kTsl, "XlaCompile:#module=jit_step#"));
  ranges.BeginCompile(kLine);
  EXPECT_FALSE(ranges.Push(kTsl, "XlaCompileBackend:#module=jit_step,program_id=4#"));
  {
    const ContextId refined = ranges.Refine(kLine);
    EXPECT_EQ(refined, sink.Find(kLine, {"[compile]", "jit_step"}));
  }
  ranges.Pop(kTsl);
  ranges.Pop(kTsl);
  EXPECT_EQ(ranges.Refine(kLine), kLine);
}

// Keeps the metrics registered by name (FakeContextSink keeps none).
class NamedMetricSink : public FakeContextSink {
 public:
  int RegisterNamedMetric(std::string_view name, std::string_view, std::string_view) override {
    std::lock_guard<std::mutex> guard(named_mutex_);
    for (size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == name) return static_cast<int>(i);
    }
    names_.emplace_back(name);
    return static_cast<int>(names_.size() - 1);
  }
  void AddNamed(ContextId context, int metric, double value) override {
    std::lock_guard<std::mutex> guard(named_mutex_);
    named_.push_back({context, names_.at(static_cast<size_t>(metric)), value});
  }
  struct Added {
    ContextId context;
    std::string metric;
    double value;
  };
  std::vector<Added> named() const {
    std::lock_guard<std::mutex> guard(named_mutex_);
    return named_;
  }

 private:
  mutable std::mutex named_mutex_;
  std::vector<std::string> names_;
  std::vector<Added> named_;
};

TEST(XlaRangesCompileTime, AWholeCompilationAddsItsWallTimeToItsModuleNode) {
  NamedMetricSink sink;
  XlaRanges ranges(sink, &IsWorker);
  ranges.OnDomainCreated(kTsl, "TSL");
  ASSERT_TRUE(ranges.Push(kTsl, "XlaCompile:#module=jit_step#"));
  ranges.BeginCompile(kLine);
  ranges.Push(kTsl, "XlaCompileBackend:#module=jit_step,program_id=4#");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ranges.Pop(kTsl);
  EXPECT_TRUE(sink.named().empty());  // a pass inside the compilation: not yet
  ranges.Pop(kTsl);
  const auto named = sink.named();
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].context, sink.Find(kLine, {"[compile]", "jit_step"}));
  EXPECT_EQ(named[0].metric, "compile_wall_time");
  EXPECT_GE(named[0].value, 20e6);
  EXPECT_LT(named[0].value, 20e9);
  // A compilation nobody triggered from a Python line adds nothing.
  ASSERT_TRUE(ranges.Push(kTsl, "XlaCompile:#module=jit_other#"));
  ranges.Pop(kTsl);
  EXPECT_EQ(sink.named().size(), 1u);
}

TEST_F(XlaRangesTest, CompilerThreadsWorkGoesToTheCompilingLine) {
  ranges.Push(kTsl, "XlaCompile:#module=jit_step#");
  ranges.BeginCompile(kLine);
  ContextId autotune = 0, bare = 0, after = 0;
  std::thread worker([&] {
    bare = ranges.Refine(kWorker);  // redzone checks: no range at all
    ranges.Push(kTsl, "XlaModule:#hlo_module=gemm_fusion_dot.4#");
    autotune = ranges.Refine(kWorker + 1);
    ranges.Pop(kTsl);
  });
  worker.join();
  const ContextId compile = sink.Find(kLine, {"[compile]", "jit_step"});
  EXPECT_NE(compile, 0u);
  EXPECT_EQ(bare, compile);
  EXPECT_EQ(autotune, compile);
  ranges.Pop(kTsl);
  std::thread later([&] { after = ranges.Refine(kWorker); });
  later.join();
  EXPECT_EQ(after, kWorker);  // compilation over: the thread's own node
}

TEST(XlaRangesSources, SourceLinesGoBetweenThePhaseAndTheScopes) {
  FakeContextSink sink;
  HloSourceRegistry sources;
  XlaRanges ranges(sink, &IsWorker, sources);
  ranges.OnDomainCreated(kTsl, "TSL");
  ranges.Push(kTsl, "XlaModule:#hlo_module=jit_step,program_id=5#");
  ranges.Push(kTsl, "Thunk:#name=jit(step)/jvp(layer0)/dot_general,hlo_op=gemm_fusion_dot.3#");
  // Not registered yet: the operation without lines.
  const ContextId before = ranges.Refine(kLine);
  EXPECT_EQ(before, sink.Find(kLine, {"[forward]", "layer0", "dot_general", "gemm_fusion_dot.3"}));
  HloSources module;
  module.module = "jit_step";
  module.frames["gemm_fusion_dot.3"] = {{"t.py", "step", 41}, {"t.py", "forward", 31}};
  sources.Add(module);
  const ContextId after = ranges.Refine(kLine);
  EXPECT_NE(after, before);
  EXPECT_EQ(after, sink.Find(kLine, {"[forward]", "step", "forward", "layer0", "dot_general",
                                     "gemm_fusion_dot.3"}));
  EXPECT_EQ(sink.NodeOf(sink.Find(kLine, {"[forward]", "step"})).kind,
            gpu::GpuNodeKind::kPython);
  // Another module's instruction of the same name has no lines.
  ranges.Pop(kTsl);
  ranges.Pop(kTsl);
  ranges.Push(kTsl, "XlaModule:#hlo_module=jit_other,program_id=6#");
  ranges.Push(kTsl, "Thunk:#name=jit(other)/jvp(layer0)/dot_general,hlo_op=gemm_fusion_dot.3#");
  EXPECT_EQ(ranges.Refine(kLine), before);
}

TEST_F(XlaRangesTest, NonXlaRangesChangeNothing) {
  ranges.Push(kTsl, "my own range");
  EXPECT_EQ(ranges.Refine(kLine), kLine);
  EXPECT_EQ(ranges.Refine(kWorker), kWorker);
}

// XLA records its command buffer at the first run: a traced command (a
// cuBLAS GEMM) is captured into a child graph inside its instruction's
// range; launches of the command buffer run those kernels under nodes the
// backend never saw. They are placed by position and name.
TEST_F(XlaRangesTest, CapturedKernelsOfACommandBufferArePlacedByPosition) {
  const char* kModule = "XlaModule:#hlo_module=jit_step,program_id=5#";
  const char* kBuffer = "Thunk:#hlo_op=command_buffer_1#";
  ranges.Push(kTsl, kModule);
  ranges.Push(kTsl, kBuffer);
  ranges.Push(kTsl, "Thunk:#name=jit(step)/jvp(layer0)/dot_general,hlo_op=custom-call.1#");
  ranges.OnCapturedKernel("sm90_gemm_nt");
  ranges.Pop(kTsl);
  ranges.Push(kTsl, "Thunk:#name=jit(step)/jvp(layer0)/tanh,hlo_op=wrapped_tanh#");
  ranges.Pop(kTsl);
  ranges.Push(kTsl, "Thunk:#name=jit(step)/jvp(layer1)/dot_general,hlo_op=custom-call.2#");
  ranges.OnCapturedKernel("sm90_gemm_nt");
  ranges.Pop(kTsl);
  ranges.OnGraphLaunch(7, kLine);  // the first launch, right after recording
  ranges.Pop(kTsl);
  ranges.Pop(kTsl);
  // A later run retraces (new buffers): the recording stays as it was.
  ranges.Push(kTsl, kModule);
  ranges.Push(kTsl, kBuffer);
  ranges.Push(kTsl, "Thunk:#name=jit(step)/jvp(layer1)/dot_general,hlo_op=custom-call.2#");
  ranges.OnCapturedKernel("sm90_gemm_nt");
  ranges.Pop(kTsl);
  ranges.OnGraphLaunch(8, kLine);
  ranges.Pop(kTsl);
  ranges.Pop(kTsl);

  const ContextId first = ranges.ResolveGraphKernel(7, 900, "sm90_gemm_nt");
  const ContextId second = ranges.ResolveGraphKernel(7, 901, "sm90_gemm_nt");
  EXPECT_EQ(first, sink.Find(kLine, {"[forward]", "layer0", "dot_general", "custom-call.1"}));
  EXPECT_NE(first, 0u);
  EXPECT_EQ(second, sink.Find(kLine, {"[forward]", "layer1", "dot_general", "custom-call.2"}));
  EXPECT_NE(second, 0u);
  EXPECT_EQ(ranges.ResolveGraphKernel(7, 902, "sm90_gemm_nt"), 0u);  // launch complete
  // The next launch: nodes seen before keep their instruction, whatever
  // order their records come in; a name that does not match is not placed.
  EXPECT_EQ(ranges.ResolveGraphKernel(8, 901, "sm90_gemm_nt"), second);
  EXPECT_EQ(ranges.ResolveGraphKernel(8, 903, "other_kernel"), 0u);
  EXPECT_EQ(ranges.ResolveGraphKernel(99, 900, "sm90_gemm_nt"), 0u);  // not a command buffer
  EXPECT_EQ(ranges.graph_kernels_placed(), 3u);
}

TEST_F(XlaRangesTest, CommandBufferKernelsStayAlignedAcrossExtraAndMissingOnes) {
  ranges.Push(kTsl, "XlaModule:#hlo_module=jit_step,program_id=5#");
  ranges.Push(kTsl, "Thunk:#hlo_op=command_buffer_1#");
  const char* instructions[] = {"custom-call.1", "custom-call.2", "custom-call.3"};
  const char* kernels[] = {"gemm_nn", "gemm_nt", "gemm_tn"};
  for (int i = 0; i < 3; ++i) {
    ranges.Push(kTsl, std::string("Thunk:#name=jit(step)/dot_general,hlo_op=") + instructions[i] +
                          "#");
    ranges.OnCapturedKernel(kernels[i]);
    ranges.Pop(kTsl);
  }
  ranges.OnGraphLaunch(7, kLine);
  ranges.Pop(kTsl);
  ranges.Pop(kTsl);
  const auto op = [&](const char* instruction) {
    return sink.Find(kLine, {"dot_general", instruction});
  };
  // An extra kernel (not recorded) matches nothing and holds no position;
  // a recorded kernel that does not run (gemm_nt) is skipped.
  EXPECT_EQ(ranges.ResolveGraphKernel(7, 50, "warmup"), 0u);
  const ContextId first = ranges.ResolveGraphKernel(7, 51, "gemm_nn");
  const ContextId third = ranges.ResolveGraphKernel(7, 52, "gemm_tn");
  EXPECT_EQ(first, op("custom-call.1"));
  EXPECT_NE(first, 0u);
  EXPECT_EQ(third, op("custom-call.3"));
  EXPECT_NE(third, 0u);
  EXPECT_EQ(op("custom-call.2"), 0u);
  EXPECT_EQ(ranges.ResolveGraphKernel(7, 51, "gemm_nn"), 0u);  // launch complete
}

TEST_F(XlaRangesTest, CommandBufferMemsetsKeepTheirOwnPositions) {
  ranges.Push(kTsl, "XlaModule:#hlo_module=jit_step,program_id=5#");
  ranges.Push(kTsl, "Thunk:#hlo_op=command_buffer_1#");
  ranges.Push(kTsl, "Thunk:#name=jit(step)/dot_general,hlo_op=custom-call.1#");
  ranges.OnCapturedKernel("<memset>");  // cuBLAS clears its output first
  ranges.OnCapturedKernel("gemm_nt");
  ranges.Pop(kTsl);
  ranges.Push(kTsl, "Thunk:#name=jit(step)/dot_general,hlo_op=custom-call.2#");
  ranges.OnCapturedKernel("<memset>");
  ranges.OnCapturedKernel("gemm_nt");
  ranges.Pop(kTsl);
  ranges.OnGraphLaunch(7, kLine);
  ranges.Pop(kTsl);
  ranges.Pop(kTsl);
  // Kernel records first, then the memsets' (another activity kind).
  const ContextId k1 = ranges.ResolveGraphKernel(7, 60, "gemm_nt");
  const ContextId k2 = ranges.ResolveGraphKernel(7, 61, "gemm_nt");
  const ContextId m1 = ranges.ResolveGraphKernel(7, 62, "<memset>");
  const ContextId m2 = ranges.ResolveGraphKernel(7, 63, "<memset>");
  const ContextId first = sink.Find(kLine, {"dot_general", "custom-call.1"});
  const ContextId second = sink.Find(kLine, {"dot_general", "custom-call.2"});
  EXPECT_NE(first, 0u);
  EXPECT_NE(second, 0u);
  EXPECT_EQ(k1, first);
  EXPECT_EQ(k2, second);
  EXPECT_EQ(m1, first);
  EXPECT_EQ(m2, second);
  EXPECT_EQ(ranges.ResolveGraphKernel(7, 64, "<memset>"), 0u);  // launch complete
}

TEST_F(XlaRangesTest, KernelsCapturedOutsideACommandBufferAreNotRecorded) {
  ranges.Push(kTsl, "XlaModule:#hlo_module=jit_f,program_id=2#");
  ranges.Push(kTsl, "Thunk:#name=jit(f)/dot_general,hlo_op=custom-call.1#");
  ranges.OnCapturedKernel("gemm");  // no command buffer around it
  ranges.OnGraphLaunch(3, kLine);
  ranges.Pop(kTsl);
  ranges.Pop(kTsl);
  EXPECT_EQ(ranges.ResolveGraphKernel(3, 1, "gemm"), 0u);
}

}  // namespace
}  // namespace deepcontext::xla
