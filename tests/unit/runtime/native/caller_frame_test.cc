// Unwinder::CaptureNear from a caller frame (DEEPCONTEXT_CALLER_FRAME, as
// the runtime's entry points take it): the frames inner of it are left out,
// the others are what a full capture gives, and the cfi-cache walk begins
// at that frame instead of stepping through the ones it leaves out. This
// file keeps frame pointers, so its frames' CFAs come from rbp: a walk
// started with a wrong rbp loses them.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "runtime/native/cfi_walk.h"
#include "runtime/native/native_stack.h"
#include "runtime/native/walk_memo.h"
#include "tests/unit/runtime/native/unwinder_params.h"

namespace deepcontext::native {
namespace {

enum class Start { kNone, kCallerFrame, kWrongCfa };

struct Result {
  uintptr_t near[kMaxNativeDepth];
  uintptr_t near_sps[kMaxNativeDepth];
  int near_count = 0;
  uintptr_t full[kMaxNativeDepth];
  int full_count = 0;
  CallerFrame start;
  // Whether the thread's walk memo has a segment starting at `start`:
  // only a walk that began there recorded one.
  bool memo_starts_there = false;
};

// Kept as real frames: no inlining, no tail calls (see CMakeLists.txt).
__attribute__((noinline)) void CaptureBoth(const Unwinder& unwinder, const CallerFrame* start,
                                           Result* result) {
  AnchorUse use;
  result->near_count = unwinder.CaptureNear(nullptr, 0, result->near, result->near_sps,
                                            kMaxNativeDepth, &use, start);
  result->full_count = unwinder.Capture(result->full, kMaxNativeDepth, 0);
  internal::ThreadUnwindState* thread = internal::ThisThreadUnwindState();
  int count = 0;
  result->memo_starts_there =
      thread != nullptr &&
      thread->memo.Find(internal::WalkState{result->start.pc, result->start.cfa}, &count) !=
          nullptr;
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void Inner(const Unwinder& unwinder, const CallerFrame* start,
                                     Result* result) {
  CaptureBoth(unwinder, start, result);
  asm volatile("" ::: "memory");
}

// Stands in for a runtime entry point (dlmonitor_event_emit): takes its
// frame, then calls down to the capture.
__attribute__((noinline)) void Entry(const Unwinder& unwinder, Start how, Result* result) {
  result->start = DEEPCONTEXT_CALLER_FRAME();
  CallerFrame wrong = result->start;
  wrong.cfa += sizeof(uintptr_t);  // no longer holds pc just below it
#if defined(__aarch64__)
  // Where the pc is read on AArch64: now the saved x29. (8 bytes higher,
  // this frame's locals start, and `wrong` itself holds the pc there.)
  wrong.record_end -= sizeof(uintptr_t);
#endif
  const CallerFrame* start = how == Start::kCallerFrame ? &result->start
                             : how == Start::kWrongCfa  ? &wrong
                                                        : nullptr;
  Inner(unwinder, start, result);
  asm volatile("" ::: "memory");
}

// The adapter's frame, the innermost one kept.
__attribute__((noinline)) void Caller(const Unwinder& unwinder, Start how, Result* result) {
  Entry(unwinder, how, result);
  asm volatile("" ::: "memory");
}

// On a thread of its own: a walk memo with nothing recorded yet.
void RunOnFreshThread(const Unwinder& unwinder, Start how, Result* result) {
  std::thread([&] { Caller(unwinder, how, result); }).join();
}

class CallerFrameTest : public ::testing::TestWithParam<UnwinderKind> {};

// The frames outer of the caller frame, and the caller's frame itself.
void ExpectCutAtCaller(const Result& result) {
  // Full: ..., Caller, Entry, Inner, CaptureBoth; near ends at Caller.
  ASSERT_GT(result.full_count, 4);
  ASSERT_EQ(result.near_count, result.full_count - 3);
  EXPECT_EQ(result.near[result.near_count - 1], result.start.pc);
  for (int i = 0; i < result.near_count; ++i) {
    EXPECT_EQ(result.near[i], result.full[i]) << "frame " << i;
  }
}

TEST_P(CallerFrameTest, FramesInnerOfTheCallerAreLeftOut) {
  const Unwinder unwinder(GetParam());
  Result result;
  RunOnFreshThread(unwinder, Start::kCallerFrame, &result);
  ExpectCutAtCaller(result);
  if (GetParam() == UnwinderKind::kCfiCache) {
#if defined(__aarch64__)
    EXPECT_EQ(result.near_sps[result.near_count - 1], result.start.record_end);
#else
    EXPECT_EQ(result.near_sps[result.near_count - 1], result.start.cfa);
#endif
    EXPECT_TRUE(result.memo_starts_there) << "the walk did not begin at the caller frame";
  }
}

TEST_P(CallerFrameTest, AFrameThatDoesNotHoldItsPcIsNotAStart) {
  const Unwinder unwinder(GetParam());
  Result result;
  RunOnFreshThread(unwinder, Start::kWrongCfa, &result);
  ExpectCutAtCaller(result);
  EXPECT_FALSE(result.memo_starts_there);
}

TEST_P(CallerFrameTest, WithoutOneTheWalkStartsInTheCapture) {
  const Unwinder unwinder(GetParam());
  Result result;
  RunOnFreshThread(unwinder, Start::kNone, &result);
  // Only this library's own frames are left out.
  ASSERT_EQ(result.near_count, result.full_count);
  for (int i = 0; i + 1 < result.near_count; ++i) {
    EXPECT_EQ(result.near[i], result.full[i]) << "frame " << i;
  }
  EXPECT_FALSE(result.memo_starts_there);
}

INSTANTIATE_TEST_SUITE_P(
    Available, CallerFrameTest,
    ::testing::ValuesIn(testing::AvailableUnwinders(
        {UnwinderKind::kCfiCache, UnwinderKind::kGlibcBacktrace, UnwinderKind::kLibunwind})),
    testing::UnwinderParamName);

}  // namespace
}  // namespace deepcontext::native
