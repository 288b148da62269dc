#include "runtime/python/frame_walker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/python/object_access.h"
#include "runtime/python/version_support.h"
#include "tests/unit/runtime/python/fake_cpython.h"

namespace deepcontext::python {
namespace {

// The generated layout for 3.<minor> on this architecture, or nullptr.
const FrameLayout* LayoutFor(int minor) {
  const StatusOr<const FrameLayout*> layout = FindLayout({3, minor, 0});
  return layout.ok() ? *layout : nullptr;
}

using fake_cpython::FakeBlock;
using fake_cpython::FakeInterpreter;

// The layouts are generated per architecture; skip where one is missing.
#define REQUIRE_LAYOUT(layout)                              \
  if ((layout) == nullptr) GTEST_SKIP() << "no layout here"

// Walks with the walker compiled for the layout (WalkerFor) and checks that
// the one reading the offsets at run time (SelectWalker) agrees.
int Walk(FakeInterpreter& fake, const void* thread_state, RawFrame* out,
         int max) {
  const FrameLayout& layout = fake.layout();
  const int count = WalkerFor(layout)(layout, fake.code_type(), thread_state, out, max);
  std::vector<RawFrame> read_at_run_time(max > 0 ? max : 1);
  const int run_time_count = SelectWalker(layout.family)(
      layout, fake.code_type(), thread_state, read_at_run_time.data(), max);
  EXPECT_EQ(count, run_time_count);
  for (int i = 0; i < count && i < run_time_count; ++i) {
    EXPECT_EQ(out[i], read_at_run_time[i]) << "frame " << i;
    EXPECT_EQ(out[i].entry, read_at_run_time[i].entry) << "frame " << i;
  }
  return count;
}

RawFrame Expected(FakeInterpreter& fake, FakeBlock* code, int lasti) {
  return RawFrame{code, lasti, CodeIdent(fake.layout(), code)};
}

// A chain of `depth` frames of distinct functions; returns the innermost.
FakeBlock* Chain(FakeInterpreter& fake, int depth,
                 std::vector<FakeBlock*>* codes) {
  FakeBlock* frame = nullptr;
  for (int i = 0; i < depth; ++i) {
    FakeBlock* code = fake.Code("f" + std::to_string(i), 10 + i);
    codes->push_back(code);
    frame = fake.Frame(code, 2 * i, frame);
  }
  return frame;
}

TEST(FrameWalkerTest, GeneratedLayoutsGetWalkersOfTheirOwn) {
  int generated = 0;
  for (int minor = 9; minor <= 13; ++minor) {
    const FrameLayout* layout = LayoutFor(minor);
    if (layout == nullptr) continue;
    ++generated;
    EXPECT_NE(WalkerFor(*layout), nullptr) << "3." << minor;
    EXPECT_NE(WalkerFor(*layout), SelectWalker(layout->family)) << "3." << minor;
    // A layout that is not one of the generated ones, even with the same
    // offsets, is read at run time.
    const FrameLayout copy = *layout;
    EXPECT_EQ(WalkerFor(copy), SelectWalker(layout->family)) << "3." << minor;
  }
  if (generated == 0) GTEST_SKIP() << "no layout here";
}

TEST(FrameWalkerTest, InterpreterFramesComeOutermostFirst) {
  REQUIRE_LAYOUT(LayoutFor(12));
  FakeInterpreter fake(*LayoutFor(12));
  FakeBlock* outer = fake.Code("outer", 1);
  FakeBlock* middle = fake.Code("middle", 5);
  FakeBlock* inner = fake.Code("inner", 9);
  FakeBlock* frame = fake.Frame(outer, 10, nullptr);
  frame = fake.Frame(middle, 20, frame);
  frame = fake.Frame(inner, 30, frame);
  RawFrame out[8];
  ASSERT_EQ(Walk(fake, fake.ThreadState(frame), out, 8), 3);
  EXPECT_EQ(out[0], Expected(fake, outer, 10));
  EXPECT_EQ(out[1], Expected(fake, middle, 20));
  EXPECT_EQ(out[2], Expected(fake, inner, 30));
}

TEST(FrameWalkerTest, SkipsCStackShimFrames) {
  REQUIRE_LAYOUT(LayoutFor(12));
  const FrameLayout& layout = *LayoutFor(12);
  FakeInterpreter fake(layout);
  FakeBlock* outer = fake.Code("outer", 1);
  FakeBlock* inner = fake.Code("inner", 9);
  FakeBlock* shim_code = fake.Code("shim", 0);
  FakeBlock* frame = fake.Frame(outer, 4, nullptr);
  frame = fake.Frame(shim_code, 0, frame, layout.owner_cstack);
  frame = fake.Frame(inner, 6, frame);
  RawFrame out[8];
  ASSERT_EQ(Walk(fake, fake.ThreadState(frame), out, 8), 2);
  EXPECT_EQ(out[0], Expected(fake, outer, 4));
  EXPECT_EQ(out[1], Expected(fake, inner, 6));
}

TEST(FrameWalkerTest, SkipsExecutablesThatAreNotCode) {
  REQUIRE_LAYOUT(LayoutFor(13));
  const FrameLayout& layout = *LayoutFor(13);
  FakeInterpreter fake(layout);
  FakeBlock* outer = fake.Code("outer", 1);
  FakeBlock* inner = fake.Code("inner", 9);
  FakeBlock* none = fake.Ascii("not code");  // a str, not a code object
  FakeBlock* frame = fake.Frame(outer, 8, nullptr);
  FakeBlock* odd = fake.Frame(inner, 0, frame);
  odd->Set<const void*>(layout.frame_code, none);
  frame = fake.Frame(inner, 12, odd);
  RawFrame out[8];
  ASSERT_EQ(Walk(fake, fake.ThreadState(frame), out, 8), 2);
  EXPECT_EQ(out[0], Expected(fake, outer, 8));
  EXPECT_EQ(out[1], Expected(fake, inner, 12));
}

TEST(FrameWalkerTest, SkipsIncompleteFramesExceptGenerators) {
  REQUIRE_LAYOUT(LayoutFor(11));
  const FrameLayout& layout = *LayoutFor(11);
  FakeInterpreter fake(layout);
  // First traceable instruction at code unit 3: byte offsets below 6 are
  // still in the prologue.
  FakeBlock* code = fake.Code("prologue", 1, /*first_traceable=*/3);
  FakeBlock* frame = fake.Frame(code, 8, nullptr);
  frame = fake.Frame(code, 4, frame, layout.owner_generator);
  frame = fake.Frame(code, 2, frame);  // incomplete: hidden
  RawFrame out[8];
  ASSERT_EQ(Walk(fake, fake.ThreadState(frame), out, 8), 2);
  EXPECT_EQ(out[0], Expected(fake, code, 8));
  EXPECT_EQ(out[1], Expected(fake, code, 4));
}

TEST(FrameWalkerTest, DepthCapKeepsInnermostFrames) {
  REQUIRE_LAYOUT(LayoutFor(12));
  FakeInterpreter fake(*LayoutFor(12));
  std::vector<FakeBlock*> codes;
  const void* tstate = fake.ThreadState(Chain(fake, 10, &codes));
  RawFrame out[10];
  ASSERT_EQ(Walk(fake, tstate, out, 4), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(out[i], Expected(fake, codes[6 + i], 2 * (6 + i))) << i;
  }
  ASSERT_EQ(Walk(fake, tstate, out, 10), 10);
  EXPECT_EQ(out[0].code, codes[0]);
  EXPECT_EQ(Walk(fake, tstate, out, 0), 0);
}

TEST(FrameWalkerTest, StopsOnCycle) {
  REQUIRE_LAYOUT(LayoutFor(12));
  const FrameLayout& layout = *LayoutFor(12);
  FakeInterpreter fake(layout);
  FakeBlock* code = fake.Code("loop", 1);
  FakeBlock* first = fake.Frame(code, 2, nullptr);
  FakeBlock* second = fake.Frame(code, 4, first);
  FakeBlock* third = fake.Frame(code, 6, second);
  first->Set<const void*>(layout.frame_previous, third);
  std::vector<RawFrame> out(1000);
  const int count = Walk(fake, fake.ThreadState(third), out.data(), 1000);
  EXPECT_GE(count, 3);
  EXPECT_LE(count, 8);

  FakeBlock* self = fake.Frame(code, 2, nullptr);
  self->Set<const void*>(layout.frame_previous, self);
  EXPECT_EQ(Walk(fake, fake.ThreadState(self), out.data(), 1000), 1);
}

TEST(FrameWalkerTest, StopsOnImplausiblePointers) {
  REQUIRE_LAYOUT(LayoutFor(12));
  const FrameLayout& layout = *LayoutFor(12);
  FakeInterpreter fake(layout);
  FakeBlock* code = fake.Code("f", 1);
  FakeBlock* outer = fake.Frame(code, 2, nullptr);
  FakeBlock* inner = fake.Frame(code, 4, nullptr);
  RawFrame out[8];
  inner->Set<const void*>(layout.frame_previous, outer->At(1));  // misaligned
  EXPECT_EQ(Walk(fake, fake.ThreadState(inner), out, 8), 1);
  inner->Set<uintptr_t>(layout.frame_previous, 0x18);  // zero page
  EXPECT_EQ(Walk(fake, fake.ThreadState(inner), out, 8), 1);
  inner->Set<uintptr_t>(layout.frame_previous, ~uintptr_t{7});  // kernel
  EXPECT_EQ(Walk(fake, fake.ThreadState(inner), out, 8), 1);
  EXPECT_EQ(out[0], Expected(fake, code, 4));
}

TEST(FrameWalkerTest, ThreadWithoutFramesYieldsNothing) {
  REQUIRE_LAYOUT(LayoutFor(13));
  FakeInterpreter fake(*LayoutFor(13));
  RawFrame out[4];
  EXPECT_EQ(Walk(fake, fake.ThreadState(nullptr), out, 4), 0);
}

TEST(FrameWalkerTest, TheInnermostRecordIsTheOneAWalkStartsAt) {
  for (int minor = 9; minor <= 13; ++minor) {
    const FrameLayout* layout = LayoutFor(minor);
    if (layout == nullptr) continue;
    FakeInterpreter fake(*layout);
    FakeBlock* code = fake.Code("f", 1);
    FakeBlock* outer = fake.Frame(code, 2, nullptr);
    FakeBlock* inner = fake.Frame(code, 4, outer);
    EXPECT_EQ(InnermostFrameRecord(*layout, fake.ThreadState(inner)), inner)
        << "3." << minor;
    EXPECT_EQ(InnermostFrameRecord(*layout, fake.ThreadState(outer)), outer)
        << "3." << minor;
    EXPECT_EQ(InnermostFrameRecord(*layout, fake.ThreadState(nullptr)), nullptr)
        << "3." << minor;
  }
}

TEST(FrameWalkerTest, TheInnermostRecordMayBeAShimAWalkSkips) {
  REQUIRE_LAYOUT(LayoutFor(12));
  const FrameLayout& layout = *LayoutFor(12);
  FakeInterpreter fake(layout);
  FakeBlock* code = fake.Code("f", 1);
  FakeBlock* frame = fake.Frame(code, 4, nullptr);
  FakeBlock* shim = fake.Frame(fake.Code("shim", 0), 0, frame, layout.owner_cstack);
  // The shim is a record of its own: a frame pushed above the entry's
  // frame, even one CPython hides, is seen as a change.
  EXPECT_EQ(InnermostFrameRecord(layout, fake.ThreadState(shim)), shim);
}

TEST(FrameWalkerTest, AnImplausibleCurrentCFrameHasNoRecord) {
  REQUIRE_LAYOUT(LayoutFor(11));
  const FrameLayout& layout = *LayoutFor(11);
  FakeInterpreter fake(layout);
  FakeBlock* tstate = fake.New();
  tstate->Set<uintptr_t>(layout.tstate_cframe, 0x18);  // zero page
  EXPECT_EQ(InnermostFrameRecord(layout, tstate), nullptr);
}

TEST(FrameWalkerTest, FrameObjectLastiIsConvertedToBytes) {
  for (const FrameLayout* layout : {LayoutFor(9), LayoutFor(10)}) {
    REQUIRE_LAYOUT(layout);
    FakeInterpreter fake(*layout);
    FakeBlock* outer = fake.Code("outer", 1);
    FakeBlock* inner = fake.Code("inner", 7);
    FakeBlock* frame = fake.Frame(outer, 14, nullptr);
    frame = fake.Frame(inner, 40, frame);
    RawFrame out[4];
    ASSERT_EQ(Walk(fake, fake.ThreadState(frame), out, 4), 2)
        << "3." << layout->minor;
    EXPECT_EQ(out[0], Expected(fake, outer, 14));
    EXPECT_EQ(out[1], Expected(fake, inner, 40));
  }
}

TEST(FrameWalkerTest, FrameObjectWalkStopsAtNonCode) {
  REQUIRE_LAYOUT(LayoutFor(10));
  const FrameLayout& layout = *LayoutFor(10);
  FakeInterpreter fake(layout);
  FakeBlock* code = fake.Code("f", 1);
  FakeBlock* outer = fake.Frame(code, 2, nullptr);
  FakeBlock* bad = fake.Frame(code, 2, outer);
  bad->Set<const void*>(layout.frame_code, fake.Ascii("garbage"));
  FakeBlock* inner = fake.Frame(code, 6, bad);
  RawFrame out[4];
  ASSERT_EQ(Walk(fake, fake.ThreadState(inner), out, 4), 1);
  EXPECT_EQ(out[0], Expected(fake, code, 6));
}

}  // namespace
}  // namespace deepcontext::python
