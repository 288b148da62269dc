// Native frames in call paths (CallPathBuilder with an unwinder): where
// they sit between the thread and an op, and the frames of GPU calls made
// inside ops. Known call chains of exported functions stand in for a
// framework's native code.
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/native/capture_stats.h"
#include "tests/unit/runtime/dlmonitor/call_path_builder_fixture.h"

namespace deepcontext::dlmonitor {
namespace {

// A known native chain ending in an op report, for the native-frame tests.
// Exported C functions: the symbolizer names them from the dynamic or the
// full symbol table.
extern "C" {
__attribute__((noinline, visibility("default"))) ContextId
CallPathTestChainC(CallPathBuilder* builder, const dlmonitor_op_data_t* op) {
  const ContextId context = builder->OnOpEnter(*op);
  asm volatile("" ::: "memory");  // no tail call: keeps this frame
  return context;
}
__attribute__((noinline, visibility("default"))) ContextId
CallPathTestChainB(CallPathBuilder* builder, const dlmonitor_op_data_t* op) {
  const ContextId context = CallPathTestChainC(builder, op);
  asm volatile("" ::: "memory");
  return context;
}
__attribute__((noinline, visibility("default"))) ContextId
CallPathTestChainA(CallPathBuilder* builder, const dlmonitor_op_data_t* op) {
  const ContextId context = CallPathTestChainB(builder, op);
  asm volatile("" ::: "memory");
  return context;
}
}

// Stands in for a GPU API call deep inside an op's implementation:
// GpuCallA -> GpuCallB -> GpuCallC -> AskContext (the GPU backend asking
// DLMonitor for the context; its own frame is left out).
extern "C" {
__attribute__((noinline, visibility("default"))) ContextId
CallPathTestAskContext(CallPathBuilder* builder) {
  const ContextId context = builder->Current(DEEPCONTEXT_CALLER_FRAME());
  asm volatile("" ::: "memory");
  return context;
}
__attribute__((noinline, visibility("default"))) ContextId
CallPathTestGpuCallC(CallPathBuilder* builder) {
  const ContextId context = CallPathTestAskContext(builder);
  asm volatile("" ::: "memory");
  return context;
}
__attribute__((noinline, visibility("default"))) ContextId
CallPathTestGpuCallB(CallPathBuilder* builder) {
  const ContextId context = CallPathTestGpuCallC(builder);
  asm volatile("" ::: "memory");
  return context;
}
__attribute__((noinline, visibility("default"))) ContextId
CallPathTestGpuCallA(CallPathBuilder* builder) {
  const ContextId context = CallPathTestGpuCallB(builder);
  asm volatile("" ::: "memory");
  return context;
}
}

// An op and a GPU call inside it, reached from OuterA or OuterB through
// Mid1 and Mid2: both outer functions run at the same stack address (one
// call site, through a pointer), so the two ops' stacks differ only in
// that one frame, three frames outer of the op.
struct OpAndCall {
  ContextId op = kNoContext;
  ContextId call = kNoContext;
};
extern "C" {
__attribute__((noinline, visibility("default"))) void CallPathTestOpWithCall(
    CallPathBuilder* builder, dlmonitor_op_data_t* op, OpAndCall* out) {
  out->op = CallPathTestChainA(builder, op);
  out->call = CallPathTestGpuCallA(builder);
  builder->OnOpExit(*op);
  asm volatile("" ::: "memory");
}
__attribute__((noinline, visibility("default"))) void CallPathTestMid2(
    CallPathBuilder* builder, dlmonitor_op_data_t* op, OpAndCall* out) {
  CallPathTestOpWithCall(builder, op, out);
  asm volatile("" ::: "memory");
}
__attribute__((noinline, visibility("default"))) void CallPathTestMid1(
    CallPathBuilder* builder, dlmonitor_op_data_t* op, OpAndCall* out) {
  CallPathTestMid2(builder, op, out);
  asm volatile("" ::: "memory");
}
// Told apart by a constant, so that the linker folds no two into one.
__attribute__((noinline, visibility("default"))) void CallPathTestOuterA(
    CallPathBuilder* builder, dlmonitor_op_data_t* op, OpAndCall* out) {
  volatile int tag = 1;
  (void)tag;
  CallPathTestMid1(builder, op, out);
  asm volatile("" ::: "memory");
}
__attribute__((noinline, visibility("default"))) void CallPathTestOuterB(
    CallPathBuilder* builder, dlmonitor_op_data_t* op, OpAndCall* out) {
  volatile int tag = 2;
  (void)tag;
  CallPathTestMid1(builder, op, out);
  asm volatile("" ::: "memory");
}
}

TEST_F(CallPathBuilderTest, NativeFramesSitBetweenThreadAndOp) {
  builder_.EnableNative(true);
  // One call site, three ops: one stack, one path.
  ContextId contexts[3] = {};
  ContextId end_after_first = kNoContext;
  for (ContextId& context : contexts) {
    auto op = Op("aten::relu", DLMONITOR_OP_OPERATOR);
    context = CallPathTestChainA(&builder_, &op);
    builder_.OnOpExit(op);
    if (end_after_first == kNoContext) end_after_first = tree_.End();
  }
  const ContextId first = contexts[0];
  EXPECT_EQ(contexts[1], first);
  EXPECT_EQ(contexts[2], first);
  EXPECT_EQ(tree_.End(), end_after_first);
  const std::string path = Path(first);
  const size_t a = path.find("/CallPathTestChainA/");
  ASSERT_NE(a, std::string::npos) << path;
  // c is the innermost native frame: the builder's own frames are cut.
  EXPECT_TRUE(path.ends_with("/CallPathTestChainA/CallPathTestChainB/"
                             "CallPathTestChainC/aten::relu"))
      << path;
  EXPECT_TRUE(path.starts_with("thread/")) << path;
  // The capture kept return addresses: frames are named when read.
  FrameKey key;
  ContextId parent = kNoContext;
  ASSERT_TRUE(tree_.Get(first, &key, &parent));
  ASSERT_TRUE(tree_.Get(parent, &key, nullptr));
  EXPECT_EQ(key.kind, kUnnamedNativeFrame);
  const FrameKey named = builder_.Named(key);
  EXPECT_EQ(named.kind, static_cast<uint32_t>(DLMONITOR_FRAME_NATIVE));
  EXPECT_EQ(strings_.Get(named.name), std::string("CallPathTestChainC"));
  // Named once: the same answer again, and other keys come back as they are.
  EXPECT_EQ(builder_.Named(key), named);
  const FrameKey op_key{DLMONITOR_FRAME_OPERATOR, strings_.Intern("aten::relu"), 0, 0};
  EXPECT_EQ(builder_.Named(op_key), op_key);

  builder_.EnableNative(false);
  auto plain = Op("aten::relu", DLMONITOR_OP_OPERATOR);
  EXPECT_EQ(Path(CallPathTestChainA(&builder_, &plain)), "thread/aten::relu");
}

TEST_F(CallPathBuilderTest, GpuCallsInsideAnOpGetTheNativeFramesBelowIt) {
  builder_.EnableNative(true);
  auto op = Op("aten::mm", DLMONITOR_OP_OPERATOR);
  const ContextId op_context = CallPathTestChainA(&builder_, &op);
  auto nested = Op("aten::addmm", DLMONITOR_OP_OPERATOR);
  const ContextId nested_context = builder_.OnOpEnter(nested);
  // One call site, called twice: a trip count the compiler cannot see keeps
  // it from peeling the loop into two call sites.
  volatile int calls = 2;
  std::vector<ContextId> inside;
  for (int i = 0; i < calls; ++i) inside.push_back(CallPathTestGpuCallA(&builder_));
  EXPECT_EQ(inside[0], inside[1]);  // one path, cached
  const std::string path = Path(inside[0]);
  // Under the innermost op, ending at the frame that made the call.
  EXPECT_TRUE(path.starts_with(Path(nested_context) + "/")) << path;
  EXPECT_TRUE(path.ends_with("/CallPathTestGpuCallA/CallPathTestGpuCallB/"
                             "CallPathTestGpuCallC"))
      << path;
  EXPECT_EQ(path.find("CallPathTestAskContext"), std::string::npos) << path;
  builder_.OnOpExit(nested);
  builder_.OnOpExit(op);
  EXPECT_NE(op_context, kNoContext);

  // Without native frames, a GPU call gets the op's own context.
  builder_.EnableNative(false);
  auto plain = Op("aten::mm", DLMONITOR_OP_OPERATOR);
  const ContextId plain_context = builder_.OnOpEnter(plain);
  EXPECT_EQ(CallPathTestGpuCallA(&builder_), plain_context);
}

// GPU calls inside an op unwind down to the op's entry stack only while it
// is the thread's latest capture: an op under a scope inside the op takes
// a newer one, after which the op's calls unwind in full, to the same path.
TEST_F(CallPathBuilderTest, GpuCallsAfterANewerCaptureKeepTheirPath) {
  builder_.EnableNative(true);
  auto op = Op("aten::mm", DLMONITOR_OP_OPERATOR);
  const ContextId op_context = CallPathTestChainA(&builder_, &op);
  volatile int calls = 2;
  std::vector<ContextId> inside;
  for (int i = 0; i < calls; ++i) {
    inside.push_back(CallPathTestGpuCallA(&builder_));
    if (i == 0) {
      auto scope = Op("region", DLMONITOR_OP_USER_SCOPE);
      builder_.OnOpEnter(scope);
      auto scoped = Op("aten::relu", DLMONITOR_OP_OPERATOR);
      CallPathTestGpuCallA(&builder_);  // a GPU call outside any op...
      builder_.OnOpEnter(scoped);       // ...and an op with its own capture
      builder_.OnOpExit(scoped);
      builder_.OnOpExit(scope);
    }
  }
  EXPECT_EQ(inside[0], inside[1]) << Path(inside[0]) << "\n" << Path(inside[1]);
  EXPECT_TRUE(Path(inside[1]).starts_with(Path(op_context) + "/")) << Path(inside[1]);
  EXPECT_TRUE(Path(inside[1]).ends_with(
      "/CallPathTestGpuCallA/CallPathTestGpuCallB/CallPathTestGpuCallC"))
      << Path(inside[1]);
  builder_.OnOpExit(op);
}

// Each op's entry unwinds only down to where its stack still holds the
// previous op's frames, and each GPU call down to where it still holds the
// previous call's: consecutive ops and calls from other places than the
// previous ones must still get their own paths.
TEST_F(CallPathBuilderTest, NativeOpsFromAnotherPlaceGetTheirOwnPath) {
  builder_.EnableNative(true);
  volatile int rounds = 2;
  for (int i = 0; i < rounds; ++i) {
    auto through_a = Op("aten::relu", DLMONITOR_OP_OPERATOR);
    const std::string a = Path(CallPathTestChainA(&builder_, &through_a));
    builder_.OnOpExit(through_a);
    auto through_b = Op("aten::relu", DLMONITOR_OP_OPERATOR);
    const std::string b = Path(CallPathTestChainB(&builder_, &through_b));
    builder_.OnOpExit(through_b);
    EXPECT_TRUE(a.ends_with("/CallPathTestChainA/CallPathTestChainB/CallPathTestChainC/aten::relu"))
        << a;
    EXPECT_TRUE(b.ends_with("/CallPathTestChainB/CallPathTestChainC/aten::relu")) << b;
    EXPECT_EQ(b.find("CallPathTestChainA"), std::string::npos) << b;
  }
}

TEST_F(CallPathBuilderTest, GpuCallsInConsecutiveOpsHangUnderEachOp) {
  builder_.EnableNative(true);
  const char* names[] = {"aten::mm", "aten::add", "aten::mm"};
  std::vector<ContextId> ops;
  std::vector<ContextId> through_a;  // GpuCallA -> B -> C
  std::vector<ContextId> through_b;  // GpuCallB -> C
  volatile int count = 3;
  for (int i = 0; i < count; ++i) {
    auto op = Op(names[i], DLMONITOR_OP_OPERATOR);
    ops.push_back(CallPathTestChainA(&builder_, &op));
    // The same call twice (the second is the previous call's stack again),
    // then one from elsewhere in the op. One call instruction for both: a
    // branch on the round in the loop let GCC for AArch64 duplicate the
    // call, and two call sites are two paths.
    volatile int repeats = 2;
    ContextId calls[2] = {kNoContext, kNoContext};
    for (int r = 0; r < repeats; ++r) calls[r] = CallPathTestGpuCallA(&builder_);
    through_a.push_back(calls[0]);
    EXPECT_EQ(calls[1], calls[0]) << Path(calls[1]) << "\n  vs\n" << Path(calls[0]);
    through_b.push_back(CallPathTestGpuCallB(&builder_));
    builder_.OnOpExit(op);
  }
  for (int i = 0; i < 3; ++i) {
    const std::string a = Path(through_a[i]);
    const std::string b = Path(through_b[i]);
    EXPECT_TRUE(a.starts_with(Path(ops[i]) + "/")) << a;
    EXPECT_TRUE(a.ends_with("/CallPathTestGpuCallA/CallPathTestGpuCallB/CallPathTestGpuCallC"))
        << a;
    EXPECT_TRUE(b.starts_with(Path(ops[i]) + "/")) << b;
    EXPECT_TRUE(b.ends_with("/CallPathTestGpuCallB/CallPathTestGpuCallC")) << b;
    EXPECT_EQ(b.find("CallPathTestGpuCallA"), std::string::npos) << b;
  }
  EXPECT_EQ(through_a[0], through_a[2]);  // the same op and call: one path
  EXPECT_NE(through_a[0], through_a[1]);
}

// A GPU call's walk meets the previous call's frames (the same chain at
// the same stack addresses) and skips checking those of them it knows from
// the op's entry capture. The next op, from OuterB instead of OuterA, takes
// a new entry capture: what the previous call shared with the old one is
// no longer known, or the call would keep OuterA's frame.
TEST_F(CallPathBuilderTest, GpuCallsAfterAnOpFromElsewhereGetItsOuterFrames) {
  builder_.EnableNative(true);
  using Outer = void (*)(CallPathBuilder*, dlmonitor_op_data_t*, OpAndCall*);
  Outer const outers[] = {&CallPathTestOuterA, &CallPathTestOuterB, &CallPathTestOuterA};
  const char* const names[] = {"CallPathTestOuterA", "CallPathTestOuterB", "CallPathTestOuterA"};
  volatile int count = 3;
  for (int i = 0; i < count; ++i) {
    auto op = Op("aten::mm", DLMONITOR_OP_OPERATOR);
    OpAndCall result;
    Outer volatile outer = outers[i];
    outer(&builder_, &op, &result);
    const std::string op_path = Path(result.op);
    const std::string call_path = Path(result.call);
    EXPECT_NE(op_path.find(std::string("/") + names[i] + "/CallPathTestMid1/"), std::string::npos)
        << op_path;
    EXPECT_EQ(call_path, op_path +
                             "/CallPathTestOpWithCall/CallPathTestGpuCallA/CallPathTestGpuCallB/"
                             "CallPathTestGpuCallC")
        << "op " << i;
  }
}

// Two callers of GpuCallB with frames of one size, called from one call
// site: the call's caller frame (the return into GpuCallC, AskContext's
// CFA) is the same under either, and only a frame outer of it differs.
extern "C" {
__attribute__((noinline, visibility("default"))) ContextId CallPathTestViaX(
    CallPathBuilder* builder) {
  volatile int tag = 1;
  (void)tag;
  const ContextId context = CallPathTestGpuCallB(builder);
  asm volatile("" ::: "memory");
  return context;
}
__attribute__((noinline, visibility("default"))) ContextId CallPathTestViaY(
    CallPathBuilder* builder) {
  volatile int tag = 2;
  (void)tag;
  const ContextId context = CallPathTestGpuCallB(builder);
  asm volatile("" ::: "memory");
  return context;
}
}

// A call answered from the trail of an earlier call from the same frame in
// the same op must still be the same stack: calls through ViaX and ViaY,
// alternating, each keep their own path, in this op and in the next op
// from the same place.
TEST_F(CallPathBuilderTest, GpuCallsFromOneFrameThroughOtherCallersKeepTheirPaths) {
  builder_.EnableNative(true);
  using Via = ContextId (*)(CallPathBuilder*);
  const Via vias[] = {&CallPathTestViaX, &CallPathTestViaY};
  const char* const names[] = {"CallPathTestViaX", "CallPathTestViaY"};
  volatile int ops = 2;
  std::vector<ContextId> answers[2];
  for (int o = 0; o < ops; ++o) {
    auto op = Op("aten::mm", DLMONITOR_OP_OPERATOR);
    const ContextId op_context = CallPathTestChainA(&builder_, &op);
    volatile int calls = 6;
    for (int i = 0; i < calls; ++i) {
      Via volatile via = vias[i % 2];
      const ContextId answer = via(&builder_);
      const std::string path = Path(answer);
      EXPECT_TRUE(path.starts_with(Path(op_context) + "/")) << path;
      EXPECT_TRUE(path.ends_with(std::string("/") + names[i % 2] +
                                 "/CallPathTestGpuCallB/CallPathTestGpuCallC"))
          << "op " << o << " call " << i << ": " << path;
      answers[i % 2].push_back(answer);
    }
    builder_.OnOpExit(op);
  }
  for (const std::vector<ContextId>& same : answers) {
    for (ContextId answer : same) EXPECT_EQ(answer, same[0]);
  }
  EXPECT_NE(answers[0][0], answers[1][0]);
}

// The trails kept so far, from the statistics line (0 before any).
uint64_t TrailsKept() {
  const std::string line = native::CaptureStatsLine();
  constexpr std::string_view kPart = "inside-op trails: ";
  const size_t at = line.find(kPart);
  return at == std::string::npos ? 0 : std::strtoull(line.c_str() + at + kPart.size(), nullptr, 10);
}

// DEEPCONTEXT_INSIDE_TRAILS is read at every start, so one process can time
// regions with and without trails (bench/workloads/gpu_models.py's
// native-no-trails). Needs the statistics, read once per process: ctest runs
// this test alone with DEEPCONTEXT_NATIVE_STATS=1
// (tests/unit/runtime/dlmonitor/CMakeLists.txt).
TEST_F(CallPathBuilderTest, GpuCallTrailsFollowTheSwitchAtEachStart) {
  if (!native::CaptureStatsEnabled()) GTEST_SKIP() << "DEEPCONTEXT_NATIVE_STATS=1 is not set";
  const char* const given = std::getenv("DEEPCONTEXT_INSIDE_TRAILS");
  const std::optional<std::string> saved =
      given != nullptr ? std::optional<std::string>(given) : std::nullopt;
  // Calls through both callers in a new op each time (a key not seen yet).
  auto calls_in_op = [this](const char* name) {
    auto op = Op(name, DLMONITOR_OP_OPERATOR);
    CallPathTestChainA(&builder_, &op);
    volatile int calls = 4;
    for (int i = 0; i < calls; ++i) {
      i % 2 == 0 ? CallPathTestViaX(&builder_) : CallPathTestViaY(&builder_);
    }
    builder_.OnOpExit(op);
  };
  setenv("DEEPCONTEXT_INSIDE_TRAILS", "0", 1);
  if (std::string_view(builder_.EnableNative(true)) != "cfi-cache") {
    GTEST_SKIP() << "trails need the cfi-cache unwinder";
  }
  const uint64_t before = TrailsKept();
  calls_in_op("aten::mm");
  const uint64_t while_off = TrailsKept();
  builder_.EnableNative(false);
  unsetenv("DEEPCONTEXT_INSIDE_TRAILS");
  builder_.EnableNative(true);
  calls_in_op("aten::bmm");
  const uint64_t while_on = TrailsKept();
  if (saved) setenv("DEEPCONTEXT_INSIDE_TRAILS", saved->c_str(), 1);
  EXPECT_EQ(while_off, before);
  EXPECT_GT(while_on, while_off);
}

TEST_F(CallPathBuilderTest, NestedOpsDoNotCaptureNativeFrames) {
  builder_.EnableNative(true);
  auto outer = Op("aten::linear", DLMONITOR_OP_OPERATOR);
  const ContextId outer_ctx = CallPathTestChainA(&builder_, &outer);
  auto inner = Op("aten::addmm", DLMONITOR_OP_OPERATOR);
  const ContextId inner_ctx = CallPathTestChainA(&builder_, &inner);
  ContextId parent = kNoContext;
  ASSERT_TRUE(tree_.Get(inner_ctx, nullptr, &parent));
  EXPECT_EQ(parent, outer_ctx);
}

}  // namespace
}  // namespace deepcontext::dlmonitor
