// Call-path assembly without Python (a C++ test process has no interpreter):
// op nesting, forward/backward grafting, engine wrappers, user scopes.
#include "runtime/dlmonitor/call_path_builder.h"

#include <gtest/gtest.h>

#include <cstdio>

#include <string>
#include <thread>
#include <vector>

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

class CallPathBuilderTest : public ::testing::Test {
 protected:
  CallPathBuilderTest()
      : python_(strings_),
        builder_(tree_, strings_, links_, python_, /*python_enabled=*/false) {}

  dlmonitor_op_data_t Op(const char* name, dlmonitor_op_kind_t kind,
                         int64_t seq = -1, uint64_t thread = 1,
                         uint64_t forward_thread = 0) {
    dlmonitor_op_data_t op{};
    op.struct_size = sizeof(op);
    op.kind = kind;
    op.name = name;
    op.op_id = next_id_++;
    op.sequence_number = seq;
    op.thread_id = thread;
    op.forward_thread_id = forward_thread;
    return op;
  }

  // "thread main thread/[forward]/aten::linear" style path of a context.
  std::string Path(ContextId id) {
    std::string path;
    while (id != kNoContext && id != kRootContext) {
      FrameKey key;
      ContextId parent = kNoContext;
      if (!tree_.Get(id, &key, &parent)) return "<invalid>";
      key = builder_.Named(key);
      std::string name = strings_.Get(key.name);
      if (key.kind == DLMONITOR_FRAME_THREAD) name = "thread";
      path = path.empty() ? name : name + "/" + path;
      id = parent;
    }
    return path;
  }

  StringTable strings_;
  ContextTree tree_;
  ForwardLinks links_;
  PythonFrameCache python_;
  CallPathBuilder builder_;
  uint64_t next_id_ = 1;
};

TEST_F(CallPathBuilderTest, NestedOpsHangUnderTheirParentWithForwardPhase) {
  auto linear = Op("aten::linear", DLMONITOR_OP_OPERATOR, 5);
  auto addmm = Op("aten::addmm", DLMONITOR_OP_OPERATOR, 6);
  ContextId linear_ctx = builder_.OnOpEnter(linear);
  ContextId addmm_ctx = builder_.OnOpEnter(addmm);
  EXPECT_EQ(Path(linear_ctx), "thread/[forward]/aten::linear");
  EXPECT_EQ(Path(addmm_ctx), "thread/[forward]/aten::linear/aten::addmm");
  EXPECT_EQ(builder_.Current(), addmm_ctx);
  EXPECT_EQ(builder_.OnOpExit(addmm), addmm_ctx);
  EXPECT_EQ(builder_.OnOpExit(linear), linear_ctx);
  // The same path again gives the same contexts (aggregation key).
  EXPECT_EQ(builder_.OnOpEnter(Op("aten::linear", DLMONITOR_OP_OPERATOR, 9)),
            linear_ctx);
}

TEST_F(CallPathBuilderTest, MemoryLiveBeforeProfilingHangsUnderTheCurrentContext) {
  EXPECT_EQ(Path(builder_.AllocatedBefore()),
            "thread/[allocated before profiling]");
  auto scope = Op("region", DLMONITOR_OP_USER_SCOPE);
  const ContextId scope_ctx = builder_.OnOpEnter(scope);
  const ContextId before = builder_.AllocatedBefore();
  EXPECT_EQ(Path(before), "thread/region/[allocated before profiling]");
  FrameKey key;
  ContextId parent = kNoContext;
  ASSERT_TRUE(tree_.Get(before, &key, &parent));
  EXPECT_EQ(key.kind, DLMONITOR_FRAME_PHASE);
  EXPECT_EQ(parent, scope_ctx);
  EXPECT_EQ(builder_.AllocatedBefore(), before);  // one node, not one per block
  builder_.OnOpExit(scope);
}

TEST_F(CallPathBuilderTest, OpsWithoutSequenceNumberHaveNoPhase) {
  ContextId ctx = builder_.OnOpEnter(Op("aten::add", DLMONITOR_OP_OPERATOR, -1));
  EXPECT_EQ(Path(ctx), "thread/aten::add");
}

TEST_F(CallPathBuilderTest, BackwardOnAnotherThreadIsGraftedUnderForwardAnchor) {
  auto scope = Op("step", DLMONITOR_OP_USER_SCOPE);
  builder_.OnOpEnter(scope);
  auto linear = Op("aten::linear", DLMONITOR_OP_OPERATOR, 5, /*thread=*/1);
  auto addmm = Op("aten::addmm", DLMONITOR_OP_OPERATOR, 6, 1);
  builder_.OnOpEnter(linear);
  builder_.OnOpEnter(addmm);
  builder_.OnOpExit(addmm);
  builder_.OnOpExit(linear);
  builder_.OnOpExit(scope);

  ContextId backward = kNoContext, mm = kNoContext, orphan = kNoContext;
  std::thread autograd([&] {
    auto fn = Op("AddmmBackward0", DLMONITOR_OP_BACKWARD_FUNCTION, 6, 2, 1);
    backward = builder_.OnOpEnter(fn);
    mm = builder_.OnOpEnter(Op("aten::mm", DLMONITOR_OP_OPERATOR, -1, 2));
    builder_.OnOpExit(fn);  // exits the nested op too
    orphan = builder_.OnOpEnter(
        Op("AccumulateGrad", DLMONITOR_OP_BACKWARD_FUNCTION, -1, 2, 0));
  });
  autograd.join();
  EXPECT_EQ(Path(backward), "thread/step/[backward]/AddmmBackward0");
  EXPECT_EQ(Path(mm), "thread/step/[backward]/AddmmBackward0/aten::mm");
  // No forward op known: under the autograd thread's own root.
  EXPECT_EQ(Path(orphan), "thread/[backward]/AccumulateGrad");
}

TEST_F(CallPathBuilderTest, EngineWrapperTakesItsFunctionsBackwardNode) {
  // The test thread plays both roles: forward first, then the engine.
  auto relu = Op("aten::relu", DLMONITOR_OP_OPERATOR, 3);
  builder_.OnOpEnter(relu);
  builder_.OnOpExit(relu);
  auto wrapper = Op("autograd::engine::evaluate_function: ReluBackward0",
                    DLMONITOR_OP_BACKWARD_WRAPPER);
  EXPECT_EQ(builder_.OnOpEnter(wrapper), kNoContext);  // pending
  auto fn = Op("ReluBackward0", DLMONITOR_OP_BACKWARD_FUNCTION, 3, 1, 1);
  ContextId fn_ctx = builder_.OnOpEnter(fn);
  EXPECT_EQ(Path(fn_ctx), "thread/[backward]/ReluBackward0");
  builder_.OnOpExit(fn);
  EXPECT_EQ(Path(builder_.OnOpExit(wrapper)), "thread/[backward]");
}

TEST_F(CallPathBuilderTest, SequenceNumberBelongsToTheLatestOpThatReportedIt) {
  // An op that records no autograd node (like `loss.item()`) reports the
  // same sequence number as the next op, which creates the node.
  auto scope_a = Op("line_a", DLMONITOR_OP_USER_SCOPE);
  builder_.OnOpEnter(scope_a);
  auto item = Op("aten::item", DLMONITOR_OP_OPERATOR, 8);
  builder_.OnOpEnter(item);
  builder_.OnOpExit(item);
  builder_.OnOpExit(scope_a);
  auto scope_b = Op("line_b", DLMONITOR_OP_USER_SCOPE);
  builder_.OnOpEnter(scope_b);
  auto conv = Op("aten::conv2d", DLMONITOR_OP_OPERATOR, 8);
  builder_.OnOpEnter(conv);
  builder_.OnOpExit(conv);
  builder_.OnOpExit(scope_b);
  auto fn = Op("ConvolutionBackward0", DLMONITOR_OP_BACKWARD_FUNCTION, 8, 1, 1);
  EXPECT_EQ(Path(builder_.OnOpEnter(fn)),
            "thread/line_b/[backward]/ConvolutionBackward0");
}

TEST_F(CallPathBuilderTest, ANameRewrittenAtTheSameAddressIsReadAgain) {
  // A user scope's name can live in a buffer that is reused for another
  // name (a formatted string): the op name cache must not go by address.
  char name[32] = "scope step 1";
  auto first = Op(name, DLMONITOR_OP_OPERATOR);
  const ContextId step1 = builder_.OnOpEnter(first);
  builder_.OnOpExit(first);
  std::snprintf(name, sizeof(name), "scope step 10");
  auto second = Op(name, DLMONITOR_OP_OPERATOR);
  const ContextId step10 = builder_.OnOpEnter(second);
  builder_.OnOpExit(second);
  std::snprintf(name, sizeof(name), "scope");
  auto third = Op(name, DLMONITOR_OP_OPERATOR);
  const ContextId shorter = builder_.OnOpEnter(third);
  builder_.OnOpExit(third);
  EXPECT_EQ(Path(step1), "thread/scope step 1");
  EXPECT_EQ(Path(step10), "thread/scope step 10");
  EXPECT_EQ(Path(shorter), "thread/scope");
  // The same text at another address is the same op.
  const std::string copy = "scope step 10";
  auto again = Op(copy.c_str(), DLMONITOR_OP_OPERATOR);
  EXPECT_EQ(builder_.OnOpEnter(again), step10);
}

TEST_F(CallPathBuilderTest, NamesRewrittenInTheirLastCharacterAreReadAgain) {
  // Short names are checked against a copy in the cache, long ones against
  // the interned text: each must be compared to its end, on both sides of
  // the length where one check gives way to the other.
  for (const size_t length : {1, 38, 39, 40, 41, 63, 64, 200}) {
    std::vector<char> buffer(length + 1, 'n');
    buffer[length] = '\0';
    std::string expected[2];
    ContextId contexts[2];
    for (int i = 0; i < 2; ++i) {
      buffer[length - 1] = i == 0 ? 'a' : 'b';
      expected[i] = std::string("thread/") + buffer.data();
      auto op = Op(buffer.data(), DLMONITOR_OP_OPERATOR);
      contexts[i] = builder_.OnOpEnter(op);
      builder_.OnOpExit(op);
    }
    EXPECT_NE(contexts[0], contexts[1]) << length;
    EXPECT_EQ(Path(contexts[0]), expected[0]) << length;
    EXPECT_EQ(Path(contexts[1]), expected[1]) << length;
    // And read from the cache again: the same answer.
    auto op = Op(buffer.data(), DLMONITOR_OP_OPERATOR);
    EXPECT_EQ(builder_.OnOpEnter(op), contexts[1]) << length;
    builder_.OnOpExit(op);
  }
}

TEST_F(CallPathBuilderTest, NamesAtAnyAlignmentAreComparedToTheirEnd) {
  // The cache compares a name a word at a time once it is 8-byte aligned:
  // at every start within a word, a name rewritten at any one byte, or cut
  // short there, is another op.
  alignas(8) char buffer[80];
  const std::string base = "autograd::engine::evaluate_function: AddmmBackward0";
  for (size_t offset = 0; offset < 8; ++offset) {
    char* name = buffer + offset;
    for (size_t at = 1; at < base.size(); at += 5) {
      std::snprintf(name, sizeof(buffer) - offset, "%s", base.c_str());
      auto original = Op(name, DLMONITOR_OP_OPERATOR);
      const ContextId first = builder_.OnOpEnter(original);
      builder_.OnOpExit(original);
      name[at] = '#';
      auto changed = Op(name, DLMONITOR_OP_OPERATOR);
      const ContextId second = builder_.OnOpEnter(changed);
      builder_.OnOpExit(changed);
      EXPECT_NE(second, first) << offset << " " << at;
      EXPECT_EQ(Path(second), "thread/" + std::string(name)) << offset << " " << at;
      name[at] = '\0';
      auto shorter = Op(name, DLMONITOR_OP_OPERATOR);
      const ContextId third = builder_.OnOpEnter(shorter);
      builder_.OnOpExit(shorter);
      EXPECT_EQ(Path(third), "thread/" + base.substr(0, at)) << offset << " " << at;
    }
  }
}

TEST_F(CallPathBuilderTest, NamesBuiltPerCallInOneBufferKeepTheirOps) {
  // Backward functions' names are built per call at one address; on a miss
  // by address a name is found by its text. More names than the text cache
  // has slots, and names alike in length and first and last bytes, share
  // slots: each must still get its own op, every time round.
  std::vector<std::string> names;
  for (int i = 0; i < 300; ++i) names.push_back("Fn" + std::to_string(i) + "Backward0");
  for (int i = 0; i < 300; ++i) {
    names.push_back("AddmmBackward" + std::string(1, static_cast<char>('a' + i % 26)) +
                    std::to_string(i) + "_same_last_8");
  }
  std::vector<ContextId> first(names.size(), kNoContext);
  char buffer[64];
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < names.size(); ++i) {
      std::snprintf(buffer, sizeof(buffer), "%s", names[i].c_str());
      auto op = Op(buffer, DLMONITOR_OP_OPERATOR);
      const ContextId context = builder_.OnOpEnter(op);
      builder_.OnOpExit(op);
      if (round == 0) {
        EXPECT_EQ(Path(context), "thread/" + names[i]);
        first[i] = context;
      } else {
        EXPECT_EQ(context, first[i]) << names[i] << " round " << round;
      }
    }
  }
}

TEST_F(CallPathBuilderTest, UnmatchedExitIsIgnored) {
  auto op = Op("aten::add", DLMONITOR_OP_OPERATOR);
  builder_.OnOpEnter(op);
  EXPECT_EQ(builder_.OnOpExit(Op("aten::never_entered", DLMONITOR_OP_OPERATOR)),
            kNoContext);
  EXPECT_NE(builder_.OnOpExit(op), kNoContext);
  EXPECT_EQ(builder_.OnOpExit(op), kNoContext);
}

TEST_F(CallPathBuilderTest, AScopeEndedOnAnotherThreadIsClosedWhereItBegan) {
  auto outer = Op("outer", DLMONITOR_OP_USER_SCOPE);
  auto async = Op("async", DLMONITOR_OP_USER_SCOPE);
  auto mm = Op("aten::mm", DLMONITOR_OP_OPERATOR);
  builder_.OnOpEnter(outer);
  builder_.OnOpEnter(async);
  builder_.OnOpEnter(mm);
  // Another thread ends it: no context there.
  ContextId ended_there = kRootContext;
  std::thread([&] { ended_there = builder_.OnOpExit(async); }).join();
  EXPECT_EQ(ended_there, kNoContext);
  // An op entered above it while it was open keeps its place.
  auto add = Op("aten::add", DLMONITOR_OP_OPERATOR);
  EXPECT_EQ(Path(builder_.OnOpEnter(add)), "thread/outer/async/aten::mm/aten::add");
  builder_.OnOpExit(add);
  EXPECT_EQ(Path(builder_.OnOpExit(mm)), "thread/outer/async/aten::mm");
  // Later ones are no longer inside it.
  EXPECT_EQ(Path(builder_.Current()), "thread/outer");
  auto tanh = Op("aten::tanh", DLMONITOR_OP_OPERATOR);
  EXPECT_EQ(Path(builder_.OnOpEnter(tanh)), "thread/outer/aten::tanh");
  builder_.OnOpExit(tanh);
  EXPECT_EQ(builder_.OnOpExit(async), kNoContext);
  EXPECT_EQ(Path(builder_.OnOpExit(outer)), "thread/outer");
}

TEST_F(CallPathBuilderTest, AnEndPostedBeforeAnOpBeganDoesNotCloseIt) {
  // This thread's op 5 began before profiling; its exit, seen before the
  // thread's id is, is posted as if another thread had ended it, and a GPU
  // call takes it while the thread's id is still unknown.
  auto before = Op("aten::linear", DLMONITOR_OP_OPERATOR, -1, /*thread=*/9);
  before.op_id = 5;
  EXPECT_EQ(builder_.OnOpExit(before), kNoContext);
  builder_.Current();
  // A new op takes id 5; another thread's post makes this one look again.
  auto mm = Op("aten::mm", DLMONITOR_OP_OPERATOR, -1, 9);
  mm.op_id = 5;
  builder_.OnOpEnter(mm);
  auto elsewhere = Op("aten::never_here", DLMONITOR_OP_OPERATOR, -1, 9);
  std::thread([&] { builder_.OnOpExit(elsewhere); }).join();
  auto add = Op("aten::add", DLMONITOR_OP_OPERATOR, -1, 9);
  EXPECT_EQ(Path(builder_.OnOpEnter(add)), "thread/aten::mm/aten::add");
  builder_.OnOpExit(add);
  EXPECT_EQ(Path(builder_.OnOpExit(mm)), "thread/aten::mm");
}

TEST_F(CallPathBuilderTest, ResetAfterForkDropsOpenOpsAndLinks) {
  auto op = Op("aten::linear", DLMONITOR_OP_OPERATOR, 4);
  builder_.OnOpEnter(op);
  builder_.ResetAfterFork();
  EXPECT_EQ(builder_.OnOpExit(op), kNoContext);
  EXPECT_EQ(links_.Find(1, 4), kNoContext);
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
