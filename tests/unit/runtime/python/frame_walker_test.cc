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
  return FindLayout({3, minor, 0}, nullptr);
}

using fake_cpython::FakeBlock;
using fake_cpython::FakeInterpreter;

// The layouts are generated per architecture; skip where one is missing.
#define REQUIRE_LAYOUT(layout)                              \
  if ((layout) == nullptr) GTEST_SKIP() << "no layout here"

int Walk(FakeInterpreter& fake, const void* thread_state, RawFrame* out,
         int max) {
  return SelectWalker(fake.layout().family)(fake.layout(), fake.code_type(),
                                            thread_state, out, max);
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

// A fake thread whose frames are pushed and popped like CPython's: popped
// frames' memory is reused by later pushes (same addresses, new contents).
class FakeThread {
 public:
  FakeThread(FakeInterpreter& fake, const FrameLayout& layout)
      : fake_(fake), layout_(layout), tstate_(fake.ThreadState(nullptr)) {}

  const void* tstate() const { return tstate_; }
  std::vector<FakeBlock*>& frames() { return frames_; }

  FakeBlock* Push(FakeBlock* code, int lasti, int owner = 0) {
    FakeBlock* frame = nullptr;
    if (!spare_.empty()) {
      frame = spare_.back();
      spare_.pop_back();
      *frame = FakeBlock{};
    } else {
      frame = fake_.New();
    }
    frame->Set<const void*>(layout_.frame_code, code);
    frame->Set<const void*>(layout_.frame_instr, code->At(layout_.code_adaptive + lasti));
    frame->Set<char>(layout_.frame_owner, static_cast<char>(owner));
    frame->Set<const void*>(layout_.frame_previous,
                            frames_.empty() ? nullptr : frames_.back());
    frames_.push_back(frame);
    Publish();
    return frame;
  }

  void Pop() {
    spare_.push_back(frames_.back());
    frames_.pop_back();
    Publish();
  }

  void MoveTo(FakeBlock* frame, FakeBlock* code, int lasti) {
    frame->Set<const void*>(layout_.frame_instr, code->At(layout_.code_adaptive + lasti));
  }

 private:
  void Publish() {
    const void* current = frames_.empty() ? nullptr : frames_.back();
    auto* tstate = const_cast<FakeBlock*>(static_cast<const FakeBlock*>(tstate_));
    if (layout_.tstate_cframe >= 0) {
      auto* cframe = const_cast<FakeBlock*>(
          static_cast<const FakeBlock*>(LoadPointer(tstate, layout_.tstate_cframe)));
      cframe->Set<const void*>(layout_.cframe_current_frame, current);
    } else {
      tstate->Set<const void*>(layout_.tstate_frame, current);
    }
  }

  FakeInterpreter& fake_;
  const FrameLayout& layout_;
  const void* tstate_;
  std::vector<FakeBlock*> frames_;  // outermost first
  std::vector<FakeBlock*> spare_;
};

// The remembered walk returns what a fresh walk returns, whatever the
// thread did in between: pushes onto reused frame memory, pops, an outer
// frame moving to another line, shim, generator and incomplete frames,
// entry flags, and walks of different depths.
TEST(FrameWalkerTest, RememberedWalkAlwaysEqualsAFreshWalk) {
  for (int minor : {11, 12, 13}) {
    const FrameLayout* layout = LayoutFor(minor);
    if (layout == nullptr || layout->family != FrameFamily::kInterpreterFrame) continue;
    FakeInterpreter fake(*layout);
    FakeThread thread(fake, *layout);
    std::vector<FakeBlock*> codes;
    for (int i = 0; i < 6; ++i) {
      codes.push_back(fake.Code("f" + std::to_string(i), 10 * i, /*first_traceable=*/i % 3));
    }
    const int shim = layout->owner_cstack >= 0 ? layout->owner_cstack : 0;
    uint64_t seed = 99 + static_cast<uint64_t>(minor);
    auto random = [&seed](int bound) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      return static_cast<int>((seed >> 33) % static_cast<uint64_t>(bound));
    };
    WalkMemo memo;
    int remembered = 0;
    for (int step = 0; step < 4000; ++step) {
      const int action = random(10);
      auto& frames = thread.frames();
      if ((action < 3 && frames.size() < 40) || frames.empty()) {
        const int owner = random(8) == 0 ? shim
                          : random(8) == 0 ? layout->owner_generator : 0;
        thread.Push(codes[random(6)], 2 * random(8), owner);
      } else if (action < 5) {
        thread.Pop();
      } else if (action < 6) {
        FakeBlock* frame = frames[random(static_cast<int>(frames.size()))];
        thread.MoveTo(frame, codes[0], 2 * random(8));
        frame->Set<const void*>(layout->frame_code, codes[0]);
      } else if (action < 7 && layout->frame_is_entry >= 0) {
        frames.back()->Set<char>(layout->frame_is_entry, static_cast<char>(random(2)));
      }
      // Otherwise nothing changed: the memo must answer.
      const int max = random(4) == 0 ? 3 : 64;
      RawFrame fresh[64], again[64];
      const int count = Walk(fake, thread.tstate(), fresh, max);
      const bool memo_was_valid = memo.valid;
      ASSERT_EQ(WalkInterpreterFramesRemembered(*layout, fake.code_type(), thread.tstate(),
                                                again, max, memo),
                count)
          << "3." << minor << " step " << step;
      for (int i = 0; i < count; ++i) {
        ASSERT_EQ(again[i], fresh[i]) << "3." << minor << " step " << step << " frame " << i;
        ASSERT_EQ(again[i].entry, fresh[i].entry) << "3." << minor << " step " << step;
      }
      if (memo_was_valid && action >= 7) ++remembered;
    }
    EXPECT_GT(remembered, 100) << "3." << minor;
  }
}

// An unchanged chain is answered from the memo: a code object's fields
// (immutable in CPython) are not read again.
TEST(FrameWalkerTest, RememberedWalkOfAnUnchangedChainReadsNoCodeObject) {
  REQUIRE_LAYOUT(LayoutFor(12));
  const FrameLayout& layout = *LayoutFor(12);
  FakeInterpreter fake(layout);
  FakeThread thread(fake, layout);
  FakeBlock* outer = fake.Code("outer", 1);
  FakeBlock* inner = fake.Code("inner", 9);
  thread.Push(outer, 4);
  thread.Push(inner, 6);
  WalkMemo memo;
  RawFrame first[8], second[8], fresh[8];
  ASSERT_EQ(WalkInterpreterFramesRemembered(layout, fake.code_type(), thread.tstate(), first, 8,
                                            memo),
            2);
  inner->Set<int32_t>(layout.code_firstlineno, 99);  // CodeIdent would change
  ASSERT_EQ(WalkInterpreterFramesRemembered(layout, fake.code_type(), thread.tstate(), second,
                                            8, memo),
            2);
  EXPECT_EQ(second[1], first[1]);
  ASSERT_EQ(Walk(fake, thread.tstate(), fresh, 8), 2);
  EXPECT_NE(fresh[1].ident, first[1].ident);
  // A frame moving on is noticed.
  thread.MoveTo(thread.frames()[0], outer, 8);
  ASSERT_EQ(WalkInterpreterFramesRemembered(layout, fake.code_type(), thread.tstate(), second,
                                            8, memo),
            2);
  EXPECT_EQ(second[0].lasti, 8);
}

// A frame whose caller link changed is walked again, even when the frame it
// used to lead to still holds what the memo saw (memory CPython may since
// have freed: the memo never reads a frame the live chain does not reach).
TEST(FrameWalkerTest, RememberedWalkFollowsAChangedLink) {
  REQUIRE_LAYOUT(LayoutFor(12));
  const FrameLayout& layout = *LayoutFor(12);
  FakeInterpreter fake(layout);
  FakeThread thread(fake, layout);
  FakeBlock* outer = fake.Code("outer", 1);
  FakeBlock* middle = fake.Code("middle", 5);
  FakeBlock* other = fake.Code("other", 7);
  thread.Push(outer, 2);
  thread.Push(middle, 4);
  FakeBlock* inner = thread.Push(fake.Code("inner", 9), 6);
  WalkMemo memo;
  RawFrame out[8];
  ASSERT_EQ(WalkInterpreterFramesRemembered(layout, fake.code_type(), thread.tstate(), out, 8,
                                            memo),
            3);
  // The innermost frame now returns to another caller (on the same outer
  // frame); the old middle frame is left as it was.
  FakeBlock* elsewhere = fake.Frame(other, 12, thread.frames()[0]);
  inner->Set<const void*>(layout.frame_previous, elsewhere);
  ASSERT_EQ(WalkInterpreterFramesRemembered(layout, fake.code_type(), thread.tstate(), out, 8,
                                            memo),
            3);
  EXPECT_EQ(out[1], Expected(fake, other, 12));
}

}  // namespace
}  // namespace deepcontext::python
