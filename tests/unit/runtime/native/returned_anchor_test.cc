// Unwinder::CaptureNear with an anchor that is not known to be live: the
// thread's previous op or GPU call, whose frames may have returned since.
// Two consecutive matching frames are not enough then: every outer frame
// must still hold the anchor's return address where the anchor saw it. The
// result must always be what a full capture gives.
#include <gtest/gtest.h>

#include <cstdint>

#include "runtime/native/native_stack.h"
#include "tests/unit/runtime/native/test_anchor.h"
#include "tests/unit/runtime/native/unwinder_params.h"

namespace deepcontext::native {
namespace {

using test::Anchor;

struct Capture {
  uintptr_t near[kMaxNativeDepth];
  uintptr_t near_sps[kMaxNativeDepth];
  int near_count = 0;
  AnchorUse use;
  uintptr_t full[kMaxNativeDepth];
  int full_count = 0;
};

struct Call {
  const Unwinder* unwinder;
  Anchor* anchor;
  Capture* capture;  // null: take the anchor
  bool live = false;
  // >= 0: the anchor's frames but its innermost `all_but` are given as
  // shared with a live anchor (StackAnchor::live_prefix).
  int all_but = -1;
  uintptr_t outermost_pc = 0;  // not 0: written over the anchor's outermost pc first
};

// Kept as real frames: no inlining, no tail calls.
__attribute__((noinline)) void Leaf(const Call& call) {
  if (call.capture == nullptr) {
    call.anchor->count = call.unwinder->CaptureWithStackPointers(
        call.anchor->pcs, call.anchor->sps, kMaxNativeDepth);
  } else {
    if (call.outermost_pc != 0) call.anchor->pcs[0] = call.outermost_pc;
    const StackAnchor anchor{call.anchor->pcs, call.anchor->sps, call.anchor->count, call.live,
                             call.all_but >= 0 ? call.anchor->count - call.all_but : 0};
    call.capture->near_count =
        call.unwinder->CaptureNear(&anchor, 1, call.capture->near, call.capture->near_sps,
                                   kMaxNativeDepth, &call.capture->use);
    call.capture->full_count = call.unwinder->Capture(call.capture->full, kMaxNativeDepth, 0);
  }
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void Helper(const Call& call) {
  Leaf(call);
  asm volatile("" ::: "memory");
}

// Leaf and Helper run at the same stack addresses with the same return
// addresses whichever call site of Op called Middle: only Middle's own
// return address tells the two stacks apart.
__attribute__((noinline)) void Middle(const Call& call) {
  Helper(call);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void TwoCallSites(const Call& take, const Call& capture) {
  Middle(take);
  asm volatile("" ::: "memory");
  Middle(capture);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void OneCallSite(const Call& call) {
  Middle(call);
  asm volatile("" ::: "memory");
}

// The calls from one call site, so with the same frames (a loop the
// compiler could unroll into several call sites would not be).
__attribute__((noinline)) void Repeat(const Call* calls, int count) {
  volatile int n = count;
  for (int i = 0; i < n; ++i) OneCallSite(calls[i]);
  asm volatile("" ::: "memory");
}

// Every frame but the innermost (the captures are two calls in Leaf).
void ExpectSameStack(const Capture& capture) {
  ASSERT_GT(capture.full_count, 4);
  ASSERT_EQ(capture.near_count, capture.full_count);
  for (int i = 0; i + 1 < capture.full_count; ++i) {
    EXPECT_EQ(capture.near[i], capture.full[i]) << "frame " << i;
  }
}

class ReturnedAnchorTest : public ::testing::TestWithParam<UnwinderKind> {};

TEST_P(ReturnedAnchorTest, SamePlaceTakesTheOuterFramesFromIt) {
  const Unwinder unwinder(GetParam());
  Anchor anchor;
  Capture capture;
  const Call calls[] = {Call{&unwinder, &anchor, nullptr}, Call{&unwinder, &anchor, &capture}};
  Repeat(calls, 2);
  ExpectSameStack(capture);
  if (GetParam() == UnwinderKind::kCfiCache) {
    EXPECT_EQ(capture.use.anchor, 0);
    EXPECT_GT(capture.use.copied, capture.full_count - 6);
    // Stack addresses come with the frames, for the next capture to use.
    for (int i = 0; i < capture.use.copied; ++i) {
      EXPECT_EQ(capture.near_sps[i], anchor.sps[i]) << "frame " << i;
    }
  } else {
    EXPECT_EQ(capture.use.anchor, -1);  // no stack addresses: a full capture
  }
}

TEST_P(ReturnedAnchorTest, ChangedOuterFrameIsNotTakenFromIt) {
  const Unwinder unwinder(GetParam());
  Anchor anchor;
  Capture capture;
  TwoCallSites(Call{&unwinder, &anchor, nullptr},
               Call{&unwinder, &anchor, &capture, /*live=*/false});
  ExpectSameStack(capture);
}

// The case above does meet two consecutive anchor frames: taken as live,
// the anchor gives Middle's stale return address.
TEST(ReturnedAnchorSetupTest, LiveAnchorWouldBeWrongThere) {
  if (!UnwinderAvailable(UnwinderKind::kCfiCache)) GTEST_SKIP() << "no cfi-cache";
  const Unwinder unwinder(UnwinderKind::kCfiCache);
  Anchor anchor;
  Capture capture;
  TwoCallSites(Call{&unwinder, &anchor, nullptr},
               Call{&unwinder, &anchor, &capture, /*live=*/true});
  ASSERT_EQ(capture.use.anchor, 0);
  ASSERT_EQ(capture.near_count, capture.full_count);
  int differing = 0;
  for (int i = 0; i + 1 < capture.full_count; ++i) {
    differing += capture.near[i] != capture.full[i] ? 1 : 0;
  }
  EXPECT_EQ(differing, 1);
}

// Frames given as shared with a live anchor are not read again: past the
// last two of them, the anchor's stale outermost pc is taken as it is,
// where an anchor without that promise is refused for it.
TEST(ReturnedAnchorLivePrefixTest, FramesSharedWithALiveAnchorAreNotRead) {
  if (!UnwinderAvailable(UnwinderKind::kCfiCache)) GTEST_SKIP() << "no cfi-cache";
  const Unwinder unwinder(UnwinderKind::kCfiCache);
  constexpr uintptr_t kStale = 0x1234;
  for (const bool promised : {false, true}) {
    Anchor anchor;
    Capture capture;
    const Call calls[] = {
        Call{&unwinder, &anchor, nullptr},
        Call{&unwinder, &anchor, &capture, /*live=*/false, promised ? 3 : -1, kStale}};
    Repeat(calls, 2);
    SCOPED_TRACE(promised ? "promised" : "not promised");
    ASSERT_GT(capture.full_count, 6);
    if (promised) {
      EXPECT_EQ(capture.use.anchor, 0);
      EXPECT_EQ(capture.near[0], kStale);
    } else {
      EXPECT_EQ(capture.use.anchor, -1);
      ExpectSameStack(capture);
    }
  }
}

// The last two shared frames are still read, and the frames inner of them:
// Middle's return address, changed since the anchor (the first frame outer
// of the meeting point), is the innermost shared frame with all_but 3 and
// the first frame inner of them with all_but 4. Either way the anchor is
// refused.
TEST_P(ReturnedAnchorTest, ChangedFrameAmongTheLastSharedIsNotTakenFromIt) {
  for (const int all_but : {3, 4}) {
    const Unwinder unwinder(GetParam());
    Anchor anchor;
    Capture capture;
    TwoCallSites(Call{&unwinder, &anchor, nullptr},
                 Call{&unwinder, &anchor, &capture, /*live=*/false, all_but});
    SCOPED_TRACE(all_but);
    ExpectSameStack(capture);
  }
}

// The output may be the anchor's own arrays, as the op path keeps them.
TEST_P(ReturnedAnchorTest, OutputIntoTheAnchorItself) {
  const Unwinder unwinder(GetParam());
  Anchor anchor;
  OneCallSite(Call{&unwinder, &anchor, nullptr});
  const StackAnchor self{anchor.pcs, anchor.sps, anchor.count, false};
  AnchorUse use;
  const int count = unwinder.CaptureNear(&self, 1, anchor.pcs, anchor.sps, kMaxNativeDepth, &use);
  ASSERT_GT(count, 4);
  uintptr_t full[kMaxNativeDepth];
  const int full_count = unwinder.Capture(full, kMaxNativeDepth, 0);
  ASSERT_EQ(count, full_count);
  for (int i = 0; i + 1 < count; ++i) EXPECT_EQ(anchor.pcs[i], full[i]) << "frame " << i;
}

TEST_P(ReturnedAnchorTest, NoAnchorIsAFullCapture) {
  const Unwinder unwinder(GetParam());
  Anchor anchor;  // empty
  Capture capture;
  OneCallSite(Call{&unwinder, &anchor, &capture});
  ExpectSameStack(capture);
  EXPECT_EQ(capture.use.anchor, -1);
  EXPECT_EQ(capture.use.copied, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Available, ReturnedAnchorTest,
    ::testing::ValuesIn(testing::AvailableUnwinders(
        {UnwinderKind::kCfiCache, UnwinderKind::kGlibcBacktrace})),
    testing::UnwinderParamName);

}  // namespace
}  // namespace deepcontext::native
