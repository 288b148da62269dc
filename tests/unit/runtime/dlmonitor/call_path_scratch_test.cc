// The capture buffers CallPathBuilder keeps in a thread's state, off the
// stack (call_path_thread_state.h): a capture nested in another one of the
// same thread must get room of its own, never the frames the outer one is
// still reading.
#include <gtest/gtest.h>

#include <memory>

#include "runtime/dlmonitor/call_path_thread_state.h"

namespace deepcontext::dlmonitor {
namespace {

using call_path::BorrowedScratch;
using call_path::NativePathScratch;
using call_path::PythonCaptureLease;

constexpr int kFrames = CallPathBuilder::kMaxPythonDepth + 1;

void Fill(python::RawFrame* frames, int32_t tag) {
  for (int i = 0; i < kFrames; ++i) frames[i] = python::RawFrame{nullptr, tag + i, 0, false};
}

bool Holds(const python::RawFrame* frames, int32_t tag) {
  for (int i = 0; i < kFrames; ++i) {
    if (frames[i].lasti != tag + i) return false;
  }
  return true;
}

TEST(PythonCaptureLeaseTest, LendsTheThreadsBufferAndTakesItBack) {
  auto state = std::make_unique<ThreadState>();
  python::RawFrame* const own = state->python_capture.frames();
  {
    const PythonCaptureLease lease(*state);
    EXPECT_TRUE(lease.shared());
    EXPECT_EQ(lease.frames(), own);
    EXPECT_TRUE(state->python_capture_held);
  }
  EXPECT_FALSE(state->python_capture_held);
  const PythonCaptureLease again(*state);
  EXPECT_EQ(again.frames(), own);
}

TEST(PythonCaptureLeaseTest, NestedCaptureGetsItsOwnBufferAndLeavesTheOuterOnesFrames) {
  auto state = std::make_unique<ThreadState>();
  {
    const PythonCaptureLease outer(*state);
    Fill(outer.frames(), 1000);
    {
      const PythonCaptureLease inner(*state);
      EXPECT_FALSE(inner.shared());
      EXPECT_NE(inner.frames(), outer.frames());
      Fill(inner.frames(), 5000);
      // A third level, as deep as nesting goes.
      const PythonCaptureLease innermost(*state);
      EXPECT_NE(innermost.frames(), inner.frames());
      EXPECT_NE(innermost.frames(), outer.frames());
    }
    EXPECT_TRUE(Holds(outer.frames(), 1000));
    // The outer capture still holds the thread's buffer.
    EXPECT_TRUE(state->python_capture_held);
    const PythonCaptureLease after_inner(*state);
    EXPECT_FALSE(after_inner.shared());
  }
  EXPECT_FALSE(state->python_capture_held);
  const PythonCaptureLease next(*state);
  EXPECT_TRUE(next.shared());
}

TEST(BorrowedScratchTest, IsMadeOnceAndKeptForTheNextUser) {
  std::unique_ptr<NativePathScratch> slot;
  NativePathScratch* first = nullptr;
  {
    const BorrowedScratch<NativePathScratch> scratch(slot);
    first = &*scratch;
    EXPECT_EQ(slot, nullptr);  // lent out
  }
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(slot.get(), first);
  const BorrowedScratch<NativePathScratch> again(slot);
  EXPECT_EQ(&*again, first);
}

TEST(BorrowedScratchTest, NestedUserGetsAnotherObjectAndOneIsKept) {
  std::unique_ptr<NativePathScratch> slot;
  {
    const BorrowedScratch<NativePathScratch> outer(slot);
    outer->entry[0] = true;
    outer->entry[1] = false;
    {
      const BorrowedScratch<NativePathScratch> inner(slot);
      EXPECT_NE(&*inner, &*outer);
      inner->entry[0] = false;
      inner->entry[1] = true;
    }
    EXPECT_TRUE(outer->entry[0]);
    EXPECT_FALSE(outer->entry[1]);
    EXPECT_NE(slot, nullptr);  // the inner one's, kept back
  }
  EXPECT_NE(slot, nullptr);
}

}  // namespace
}  // namespace deepcontext::dlmonitor
