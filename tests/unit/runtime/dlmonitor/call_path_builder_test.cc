// Call-path assembly without Python (a C++ test process has no interpreter):
// op nesting, forward/backward grafting, engine wrappers, user scopes.
// Native frames in paths: call_path_native_test.cc.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/runtime/dlmonitor/call_path_builder_fixture.h"

namespace deepcontext::dlmonitor {
namespace {

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
  // short there, is another op. Names shorter than the cache's copy (the
  // second) are compared against the copy, longer ones (the first) against
  // the interned text.
  alignas(8) char buffer[80];
  for (const std::string base : {"autograd::engine::evaluate_function: AddmmBackward0",
                                 "aten::_scaled_dot_product_attention"}) {
    for (size_t offset = 0; offset < 8; ++offset) {
      char* name = buffer + offset;
      for (size_t at = 1; at < base.size(); at += base.size() < 40 ? 1 : 5) {
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

}  // namespace
}  // namespace deepcontext::dlmonitor
