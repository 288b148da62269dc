// InsideTrails (runtime/dlmonitor/inside_trails.h): a call inside an op is
// answered from a kept trail only while its stack is the one the answer was
// found for, several stacks of one caller frame keep their own answers, and
// a trail that does not describe the stack it was kept for is never used.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/dlmonitor/inside_trails.h"
#include "runtime/native/capture_stats.h"
#include "runtime/native/native_stack.h"

namespace deepcontext::dlmonitor {
namespace {

struct Scene {
  InsideTrails* trails = nullptr;
  uintptr_t anchor_pcs[native::kMaxNativeDepth];
  uintptr_t anchor_sps[native::kMaxNativeDepth];
  int anchor_count = 0;
  ContextId op = 7;
  bool keep = false;
  ContextId answer = kNoContext;  // to keep
  bool corrupt = false;           // keep it with a stack one frame off
  bool kept = false;
  ContextId found = kNoContext;
};

// Where a GPU API callback would ask for its context.
__attribute__((noinline)) void Ask(Scene* scene) {
  const native::CallerFrame caller = DEEPCONTEXT_CALLER_FRAME();
  const native::StackAnchor live{scene->anchor_pcs, scene->anchor_sps, scene->anchor_count,
                                 /*live=*/true};
  const InsideTrails::Key key{scene->op, /*entry=*/3, caller.pc, caller.cfa};
  if (scene->keep) {
    uintptr_t pcs[native::kMaxNativeDepth];
    uintptr_t sps[native::kMaxNativeDepth];
    native::AnchorUse use;
    const int count = native::Unwinder(native::UnwinderKind::kCfiCache)
                          .CaptureNear(&live, 1, pcs, sps, native::kMaxNativeDepth, &use, &caller);
    if (scene->corrupt && count > 0) pcs[count - 1] += 1;
    scene->kept = scene->trails->Keep(key, scene->answer, caller, live, pcs, sps, count);
  } else {
    scene->found = scene->trails->Answer(key, caller, live);
  }
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void Inner(Scene* scene) {
  Ask(scene);
  asm volatile("" ::: "memory");
}

// Two callers of Inner with frames of one size, called from one call site.
extern "C" {
__attribute__((noinline, visibility("default"))) void InsideTrailsTestViaX(Scene* scene) {
  volatile int tag = 1;
  (void)tag;
  Inner(scene);
  asm volatile("" ::: "memory");
}
__attribute__((noinline, visibility("default"))) void InsideTrailsTestViaY(Scene* scene) {
  volatile int tag = 2;
  (void)tag;
  Inner(scene);
  asm volatile("" ::: "memory");
}
}

using Via = void (*)(Scene*);

// The op's entry capture, the first time.
__attribute__((noinline)) void TakeAnchorOnce(Scene* scene) {
  if (scene->anchor_count == 0) {
    scene->anchor_count =
        native::Unwinder(native::UnwinderKind::kCfiCache)
            .CaptureWithStackPointers(scene->anchor_pcs, scene->anchor_sps,
                                      native::kMaxNativeDepth);
  }
  asm volatile("" ::: "memory");
}

// The op: its entry capture, then a call inside it through `via`, with no
// branch before it (which may make two call instructions of one).
__attribute__((noinline)) void Op(Scene* scene, Via via) {
  TakeAnchorOnce(scene);
  Via volatile call = via;
  call(scene);
  asm volatile("" ::: "memory");
}

// One call inside the op: keep `answer` for it, or find one.
struct Step {
  Via via;
  bool keep = false;
  ContextId answer = kNoContext;
  bool corrupt = false;
  ContextId op = 7;
};

struct Outcome {
  bool kept = false;
  ContextId found = kNoContext;
};

class InsideTrailsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::UnwinderAvailable(native::UnwinderKind::kCfiCache)) {
      GTEST_SKIP() << "no cfi rules here";
    }
  }

  // Every step from one call instruction, so that the frames outer of the
  // op are the same for all of them and only `via` tells them apart.
  std::vector<Outcome> RunAll(const std::vector<Step>& steps) {
    std::vector<Outcome> outcomes;
    for (const Step& step : steps) {
      scene_.op = step.op;
      scene_.keep = step.keep;
      scene_.answer = step.answer;
      scene_.corrupt = step.corrupt;
      scene_.found = kNoContext;
      scene_.kept = false;
      Op(&scene_, step.via);
      outcomes.push_back(Outcome{scene_.kept, scene_.found});
    }
    return outcomes;
  }

  std::unique_ptr<InsideTrails> trails_ = std::make_unique<InsideTrails>();
  Scene scene_{trails_.get()};
};

TEST_F(InsideTrailsTest, AnswersOnlyTheStackItWasKeptFor) {
  const Via x = &InsideTrailsTestViaX;
  const Via y = &InsideTrailsTestViaY;
  const std::vector<Outcome> got = RunAll({
      {x},                               // 0: nothing kept yet
      {x, /*keep=*/true, 101},           // 1: the key's first sight: not yet
      {x, /*keep=*/true, 101},           // 2: its second: kept
      {x},                               // 3: found
      {y},                               // 4: one frame outer of the caller differs
      {y, /*keep=*/true, 202},           // 5: the same caller frame, a way of its own
      {y, /*keep=*/true, 202},           // 6
      {x},                               // 7
      {y},                               // 8
      {x},                               // 9
      {x, false, kNoContext, false, 8},  // 10: another op's context, another key
  });
  EXPECT_EQ(got[0].found, kNoContext);
  EXPECT_FALSE(got[1].kept);
  EXPECT_TRUE(got[2].kept);
  EXPECT_EQ(got[3].found, 101u);
  EXPECT_EQ(got[4].found, kNoContext);
  EXPECT_FALSE(got[5].kept);
  EXPECT_TRUE(got[6].kept);
  EXPECT_EQ(got[7].found, 101u);
  EXPECT_EQ(got[8].found, 202u);
  EXPECT_EQ(got[9].found, 101u);
  EXPECT_EQ(got[10].found, kNoContext);
}

TEST_F(InsideTrailsTest, KeepsNoTrailThatDescribesAnotherStack) {
  const Via x = &InsideTrailsTestViaX;
  const std::vector<Outcome> got = RunAll({
      {x, /*keep=*/true, 101, /*corrupt=*/true},  // 0: first sight
      {x, /*keep=*/true, 101, /*corrupt=*/true},  // 1: kept for a stack one frame off
      {x},                                        // 2
      {x, /*keep=*/true, 101},                    // 3: the key is marked: not again
      {x},                                        // 4
  });
  EXPECT_FALSE(got[0].kept);
  EXPECT_FALSE(got[1].kept);
  EXPECT_EQ(got[2].found, kNoContext);
  EXPECT_FALSE(got[3].kept);
  EXPECT_EQ(got[4].found, kNoContext);
}

TEST_F(InsideTrailsTest, RecordsAMarkedKeyAgainOnceInAWhile) {
  const Via x = &InsideTrailsTestViaX;
  // First sight, then a trail for a stack one frame off: marked.
  std::vector<Step> steps = {{x, /*keep=*/true, 101, /*corrupt=*/true},
                             {x, /*keep=*/true, 101, /*corrupt=*/true}};
  // The marked key's calls are not recorded again until the last of these.
  for (uint32_t i = 1; i <= InsideTrails::kRecordMarkedEvery; ++i) {
    steps.push_back({x, /*keep=*/true, 101});
  }
  steps.push_back({x});
  const std::vector<Outcome> got = RunAll(steps);
  const uint32_t last_keep = InsideTrails::kRecordMarkedEvery + 1;
  ASSERT_EQ(got.size(), last_keep + 2);
  for (uint32_t i = 0; i < last_keep; ++i) EXPECT_FALSE(got[i].kept) << "call " << i;
  EXPECT_TRUE(got[last_keep].kept);
  EXPECT_EQ(got.back().found, 101u);
}

// With DEEPCONTEXT_NATIVE_STATS=1 (read once per process: ctest runs this
// test alone with it set, tests/unit/runtime/dlmonitor/CMakeLists.txt), the
// statistics line says why calls were not answered by a trail.
TEST_F(InsideTrailsTest, StatisticsSayWhyCallsWereNotAnswered) {
  if (!native::CaptureStatsEnabled()) GTEST_SKIP() << "DEEPCONTEXT_NATIVE_STATS=1 is not set";
  const Via x = &InsideTrailsTestViaX;
  const Via y = &InsideTrailsTestViaY;
  RunAll({
      {x, /*keep=*/true, 101, /*corrupt=*/true, /*op=*/7},  // first sight
      {x, /*keep=*/true, 101, /*corrupt=*/true, /*op=*/7},  // not the unwound stack
      {x, /*keep=*/true, 101, false, 7},                    // a key without one
      {x, /*keep=*/true, 101, false, 7},                    // again
      {x, /*keep=*/true, 102, false, 8},                    // first sight
      {x, /*keep=*/true, 102, false, 8},                    // kept
      {y, false, kNoContext, false, 8},                     // did not hold
      {x, false, kNoContext, false, 8},                     // answered
  });
  const std::string line = native::CaptureStatsLine();
  EXPECT_NE(line.find("inside-op trails: 1 kept, 0 too long (0 past 48 steps, 0 past 96 "
                      "words), 0 not recorded, "
                      "1 not the unwound stack; calls unwound: 0 in an op not the latest "
                      "captured, 1 whose trails did not hold, 2 of keys without one"),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace deepcontext::dlmonitor
