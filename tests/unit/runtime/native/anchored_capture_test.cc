// Unwinder::CaptureWithin, as the op path uses it: an op's entry takes an
// anchor (CaptureWithStackPointers), and calls made inside the op unwind
// only down to the anchor's frames that are still live, taking the rest
// from it. The result must be what a full capture gives.
#include <gtest/gtest.h>

#include <cstdint>

#include "runtime/native/native_stack.h"
#include "tests/unit/runtime/native/test_anchor.h"
#include "tests/unit/runtime/native/unwinder_params.h"

#if defined(__x86_64__)
// void dc_anchor_trampoline(void (*fn)(void*), void* arg): calls fn(arg)
// from a frame whose CFA is a DWARF expression (rsp + 16, written as
// DW_OP_breg7 16), which the cfi-cache walk does not model: captures
// through it fall back to libgcc.
asm(R"(
  .text
  .globl dc_anchor_trampoline
  .type dc_anchor_trampoline, @function
dc_anchor_trampoline:
  .cfi_startproc
  sub $8, %rsp
  .cfi_escape 0x0f, 0x02, 0x77, 0x10
  mov %rdi, %rax
  mov %rsi, %rdi
  call *%rax
  add $8, %rsp
  .cfi_def_cfa %rsp, 8
  ret
  .cfi_endproc
  .size dc_anchor_trampoline, .-dc_anchor_trampoline
)");
extern "C" void dc_anchor_trampoline(void (*fn)(void*), void* arg);
#endif

namespace deepcontext::native {
namespace {

using test::Anchor;

// A capture inside the "op": both ways, from one frame.
struct Inside {
  uintptr_t within[kMaxNativeDepth];
  int within_count = 0;
  uintptr_t full[kMaxNativeDepth];
  int full_count = 0;
};

enum class Mode { kTakeAnchor, kCaptureInside };

// Kept as real frames: no inlining, no tail calls.
__attribute__((noinline)) void Leaf(const Unwinder& unwinder, Anchor* anchor,
                                    Mode mode, Inside* inside) {
  if (mode == Mode::kTakeAnchor) {
    anchor->count = unwinder.CaptureWithStackPointers(anchor->pcs, anchor->sps,
                                                      kMaxNativeDepth);
  } else {
    inside->within_count = unwinder.CaptureWithin(
        anchor->pcs, anchor->sps, anchor->count, inside->within, kMaxNativeDepth);
    inside->full_count = unwinder.Capture(inside->full, kMaxNativeDepth, 0);
  }
  asm volatile("" ::: "memory");
}

// One call instruction for both modes: its frame matches the anchor's at the
// same stack address, while its caller's call site differs.
__attribute__((noinline)) void Helper(const Unwinder& unwinder, Anchor* anchor,
                                      Mode mode, Inside* inside) {
  Leaf(unwinder, anchor, mode, inside);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void Deeper(const Unwinder& unwinder, Anchor* anchor,
                                      Inside* inside) {
  Helper(unwinder, anchor, Mode::kCaptureInside, inside);
  asm volatile("" ::: "memory");
}

// The "op": its entry takes the anchor, then a call inside it captures.
// `tamper` changes the anchor's outermost frame in between, to tell frames
// copied from the anchor from frames unwound.
__attribute__((noinline)) void Op(const Unwinder& unwinder, Anchor* anchor,
                                  Inside* inside, bool through_deeper,
                                  bool tamper) {
  Helper(unwinder, anchor, Mode::kTakeAnchor, inside);
  asm volatile("" ::: "memory");
  if (tamper && anchor->count > 0) anchor->pcs[0] = 1;
  if (through_deeper) {
    Deeper(unwinder, anchor, inside);
  } else {
    Helper(unwinder, anchor, Mode::kCaptureInside, inside);
  }
  asm volatile("" ::: "memory");
}

class AnchoredCaptureTest : public ::testing::TestWithParam<UnwinderKind> {};

// Every frame but the innermost (the two captures are two calls of Leaf).
void ExpectSameStack(const Inside& inside) {
  ASSERT_GT(inside.full_count, 3);
  ASSERT_EQ(inside.within_count, inside.full_count);
  for (int i = 0; i + 1 < inside.full_count; ++i) {
    EXPECT_EQ(inside.within[i], inside.full[i]) << "frame " << i;
  }
}

TEST_P(AnchoredCaptureTest, SameFramesAsAFullCapture) {
  const Unwinder unwinder(GetParam());
  Anchor anchor;
  Inside inside;
  Op(unwinder, &anchor, &inside, /*through_deeper=*/true, /*tamper=*/false);
  ExpectSameStack(inside);
}

// Helper's frame is at the same stack address with the same return address
// in the anchor and inside, but Op called it from another call site: one
// matching frame must not end the walk.
TEST_P(AnchoredCaptureTest, OneMatchingFrameIsNotEnough) {
  const Unwinder unwinder(GetParam());
  Anchor anchor;
  Inside inside;
  Op(unwinder, &anchor, &inside, /*through_deeper=*/false, /*tamper=*/false);
  ExpectSameStack(inside);
}

TEST_P(AnchoredCaptureTest, OuterFramesComeFromTheAnchor) {
  const Unwinder unwinder(GetParam());
  Anchor anchor;
  Inside inside;
  Op(unwinder, &anchor, &inside, /*through_deeper=*/true, /*tamper=*/true);
  ASSERT_GT(inside.within_count, 3);
  if (GetParam() == UnwinderKind::kCfiCache) {
    // Only the cfi-cache walk knows stack addresses: it stopped at the
    // test's frames and copied the outermost one, as changed.
    EXPECT_EQ(inside.within[0], 1u);
    EXPECT_NE(inside.full[0], 1u);
  } else {
    // Other unwinders have no stack addresses: a full capture.
    EXPECT_NE(inside.within[0], 1u);
  }
}

TEST_P(AnchoredCaptureTest, EmptyAnchorIsAFullCapture) {
  const Unwinder unwinder(GetParam());
  Anchor anchor;
  Inside inside;
  Leaf(unwinder, &anchor, Mode::kCaptureInside, &inside);
  ExpectSameStack(inside);
}

#if defined(__x86_64__)
struct ThroughTrampoline {
  const Unwinder* unwinder;
  Anchor* anchor;
  Inside* inside;
};

__attribute__((noinline)) void CaptureInsideFromTrampoline(void* arg) {
  auto* call = static_cast<ThroughTrampoline*>(arg);
  Helper(*call->unwinder, call->anchor, Mode::kCaptureInside, call->inside);
  asm volatile("" ::: "memory");
}

// The "op" again, with a frame the cfi-cache walk cannot step through
// between its entry and the capture inside it.
__attribute__((noinline)) void OpWithUnmodelledFrame(const Unwinder& unwinder, Anchor* anchor,
                                                     Inside* inside, bool tamper) {
  Helper(unwinder, anchor, Mode::kTakeAnchor, inside);
  asm volatile("" ::: "memory");
  if (tamper && anchor->count > 0) anchor->pcs[0] = 1;
  ThroughTrampoline call{&unwinder, anchor, inside};
  dc_anchor_trampoline(&CaptureInsideFromTrampoline, &call);
  asm volatile("" ::: "memory");
}

// libgcc takes over such captures, and stops at the anchor all the same.
TEST(AnchoredCaptureLibgccTest, FallbackStopsAtTheAnchorToo) {
  if (!UnwinderAvailable(UnwinderKind::kCfiCache)) GTEST_SKIP() << "no cfi-cache";
  const Unwinder unwinder(UnwinderKind::kCfiCache);
  Anchor anchor;
  Inside inside;
  const uint64_t before = CfiUnwindStatistics().libgcc_fallbacks;
  OpWithUnmodelledFrame(unwinder, &anchor, &inside, /*tamper=*/false);
  EXPECT_GT(CfiUnwindStatistics().libgcc_fallbacks, before);
  ExpectSameStack(inside);

  Anchor tampered;
  Inside copied;
  OpWithUnmodelledFrame(unwinder, &tampered, &copied, /*tamper=*/true);
  ASSERT_GT(copied.within_count, 3);
  EXPECT_EQ(copied.within[0], 1u);  // the walk stopped and copied the anchor
  EXPECT_NE(copied.full[0], 1u);
}
#endif

INSTANTIATE_TEST_SUITE_P(
    Available, AnchoredCaptureTest,
    ::testing::ValuesIn(testing::AvailableUnwinders(
        {UnwinderKind::kCfiCache, UnwinderKind::kGlibcBacktrace})),
    testing::UnwinderParamName);

}  // namespace
}  // namespace deepcontext::native
