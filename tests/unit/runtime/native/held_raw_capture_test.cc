// A capture made while another capture of the same thread holds the
// thread's RawCapture (a signal handler's, interrupting it) must neither
// write into that buffer nor lose frames (native_stack.cc's CaptureOnStack).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "runtime/native/cfi_walk.h"
#include "runtime/native/native_stack.h"
#include "tests/unit/runtime/native/call_chain.h"
#include "tests/unit/runtime/native/unwinder_params.h"

namespace deepcontext::native {
namespace {

using internal::RawCapture;

uintptr_t Sentinel(int i) { return 0x5e5e0000u + static_cast<uintptr_t>(i); }

class HeldRawCaptureTest : public ::testing::TestWithParam<UnwinderKind> {};

TEST_P(HeldRawCaptureTest, CaptureWhileTheBufferIsHeldLeavesItAloneAndKeepsEveryFrame) {
  const Unwinder unwinder(GetParam());
  ASSERT_EQ(unwinder.kind(), GetParam());
  std::vector<uintptr_t> stacks[2];
  RawCapture* scratch = nullptr;
  // From one call site, so that both captures see the same frames: the
  // first through the thread's buffer, the second while it is held.
  for (int round = 0; round < 2; ++round) {
    if (round == 1) {
      internal::ThreadUnwindState* const thread = internal::ThisThreadUnwindState();
      ASSERT_NE(thread, nullptr);
      scratch = &thread->capture;
      ASSERT_FALSE(scratch->held) << "the first capture left it held";
      scratch->held = true;
      for (int i = 0; i < RawCapture::kCapacity; ++i) {
        scratch->pcs[i] = reinterpret_cast<void*>(Sentinel(i));
        scratch->sps[i] = Sentinel(i);
      }
    }
    uintptr_t pcs[kMaxNativeDepth];
    const int n = native_chain::ChainA(native_chain::CaptureRequest{&unwinder, 0}, pcs,
                                       kMaxNativeDepth);
    stacks[round].assign(pcs, pcs + n);
  }
  scratch->held = false;
  ASSERT_GE(stacks[0].size(), 3u);
  if (GetParam() == UnwinderKind::kFramePointer) {
    // Past the chain's frames (built with frame pointers) the walk reads
    // whatever the test's own frames hold: only the chain is the same.
    ASSERT_GE(stacks[1].size(), 3u);
    const std::vector<uintptr_t> chain0(stacks[0].end() - 3, stacks[0].end());
    const std::vector<uintptr_t> chain1(stacks[1].end() - 3, stacks[1].end());
    EXPECT_EQ(chain1, chain0);
  } else {
    EXPECT_EQ(stacks[1], stacks[0]);
  }
  int overwritten = 0;
  for (int i = 0; i < RawCapture::kCapacity; ++i) {
    overwritten += reinterpret_cast<uintptr_t>(scratch->pcs[i]) != Sentinel(i);
    overwritten += scratch->sps[i] != Sentinel(i);
  }
  EXPECT_EQ(overwritten, 0);
}

TEST_P(HeldRawCaptureTest, CapturesUseTheThreadsBufferAndReleaseIt) {
  const Unwinder unwinder(GetParam());
  uintptr_t pcs[kMaxNativeDepth];
  native_chain::ChainA(native_chain::CaptureRequest{&unwinder, 0}, pcs, kMaxNativeDepth);
  internal::ThreadUnwindState* const thread = internal::ThisThreadUnwindState();
  ASSERT_NE(thread, nullptr);
  RawCapture* const scratch = &thread->capture;
  for (int i = 0; i < RawCapture::kCapacity; ++i) {
    scratch->pcs[i] = reinterpret_cast<void*>(Sentinel(i));
  }
  const int n =
      native_chain::ChainA(native_chain::CaptureRequest{&unwinder, 0}, pcs, kMaxNativeDepth);
  ASSERT_GE(n, 3);
  EXPECT_FALSE(scratch->held);
  // The walk went through the buffer: ChainC's return address is in it.
  bool found = false;
  for (int i = 0; i < RawCapture::kCapacity && !found; ++i) {
    // Plus one where the unwinder reports call sites (CaptureFrom adjusts).
    const auto raw = reinterpret_cast<uintptr_t>(scratch->pcs[i]);
    found = raw == pcs[n - 1] || raw + 1 == pcs[n - 1];
  }
  EXPECT_TRUE(found);
}

INSTANTIATE_TEST_SUITE_P(
    Available, HeldRawCaptureTest,
    ::testing::ValuesIn(testing::AvailableUnwinders(
        {UnwinderKind::kLibunwind, UnwinderKind::kGlibcBacktrace, UnwinderKind::kFramePointer,
         UnwinderKind::kCfiCache})),
    testing::UnwinderParamName);

}  // namespace
}  // namespace deepcontext::native
