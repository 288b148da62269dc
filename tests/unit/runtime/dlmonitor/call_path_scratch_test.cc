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
using PythonBuffer = call_path::BorrowedScratch<call_path::PythonCaptureBuffer>;

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

TEST(PythonCaptureBufferTest, TheThreadsBufferIsLentAndTakenBack) {
  auto state = std::make_unique<ThreadState>();
  python::RawFrame* own = nullptr;
  {
    const PythonBuffer lent(state->python_capture);
    own = lent->frames();
    EXPECT_EQ(state->python_capture, nullptr);  // held by this capture
  }
  ASSERT_NE(state->python_capture, nullptr);
  EXPECT_EQ(state->python_capture->frames(), own);
  const PythonBuffer again(state->python_capture);
  EXPECT_EQ(again->frames(), own);
}

TEST(PythonCaptureBufferTest, NestedCaptureGetsItsOwnBufferAndLeavesTheOuterOnesFrames) {
  auto state = std::make_unique<ThreadState>();
  python::RawFrame* outer_frames = nullptr;
  {
    const PythonBuffer outer(state->python_capture);
    outer_frames = outer->frames();
    Fill(outer_frames, 1000);
    {
      const PythonBuffer inner(state->python_capture);
      EXPECT_NE(inner->frames(), outer_frames);
      Fill(inner->frames(), 5000);
      // A third level, as deep as nesting goes.
      const PythonBuffer innermost(state->python_capture);
      EXPECT_NE(innermost->frames(), inner->frames());
      EXPECT_NE(innermost->frames(), outer_frames);
    }
    EXPECT_TRUE(Holds(outer_frames, 1000));
    // The outer capture still holds its buffer: the next one gets another.
    const PythonBuffer after_inner(state->python_capture);
    EXPECT_NE(after_inner->frames(), outer_frames);
  }
  EXPECT_NE(state->python_capture, nullptr);
  const PythonBuffer next(state->python_capture);
  EXPECT_NE(next->frames(), nullptr);
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
