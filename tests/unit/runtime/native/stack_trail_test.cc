// Stack trails (runtime/native/stack_trail.h): recorded from a caller frame
// to an anchor, they describe the same stack a capture from that frame
// gives, hold while the stack between them is the same, and no longer hold
// once one frame between them differs or the anchor is another activation.
// Built with frame pointers (tests/unit/runtime/native/CMakeLists.txt):
// every frame's CFA comes from rbp, which the trail must then check too.
// The dlmonitor tests' frames (inside_trails_test.cc) are rsp-based.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "runtime/native/cfi_rules.h"
#include "runtime/native/native_stack.h"
#include "runtime/native/stack_trail.h"
#include "tests/unit/runtime/native/test_anchor.h"

namespace deepcontext::native {
namespace {

using test::Anchor;

enum class Action { kRecord, kCheck };

// What the innermost frame does, and what it found.
struct Ask {
  Action action = Action::kRecord;
  const Anchor* anchor = nullptr;
  bool live = true;  // the anchor is given as live (an op still running)
  // kCheck: the anchor as read with the frame outer of the two the trail
  // met holding another return address than the stack holds now.
  bool stale_outer = false;
  StackTrail* trail = nullptr;
  bool result = false;
  StackTrailRecord record = StackTrailRecord::kFailed;
  // kRecord: the capture of the same stack from the same frame, and the
  // trail's own frames.
  uintptr_t pcs[kMaxNativeDepth];
  uintptr_t sps[kMaxNativeDepth];
  int count = 0;
  AnchorUse use;
  StackTrailFrames frames;
};

// The frame a runtime entry point would report (DEEPCONTEXT_CALLER_FRAME).
__attribute__((noinline)) void Probe(Ask* ask) {
  const CallerFrame caller = DEEPCONTEXT_CALLER_FRAME();
  StackAnchor live = ask->anchor->Live();
  live.live = ask->live;
  if (ask->action == Action::kRecord) {
    ask->record = RecordStackTrail(caller, live, ask->trail, &ask->frames);
    ask->result = ask->record == StackTrailRecord::kRecorded;
    ask->count = Unwinder(UnwinderKind::kCfiCache)
                     .CaptureNear(&live, 1, ask->pcs, ask->sps, kMaxNativeDepth, &ask->use,
                                  &caller);
  } else {
    uintptr_t stale_pcs[kMaxNativeDepth];
    const int moved = ask->trail->met - 1;
    if (ask->stale_outer && moved >= 0) {
      std::copy(live.pcs, live.pcs + live.count, stale_pcs);
      stale_pcs[moved] += 1;
      live.pcs = stale_pcs;
    }
    ask->result = StackTrailHolds(*ask->trail, caller, live);
  }
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void Mid(Ask* ask) {
  Probe(ask);
  asm volatile("" ::: "memory");
}

// Two callers of Mid with frames of one size, called from one call site:
// Mid and Probe run at the same stack addresses under either, and only
// the return address into them differs.
extern "C" {
__attribute__((noinline, visibility("default"))) void StackTrailTestViaX(Ask* ask) {
  volatile int tag = 1;
  (void)tag;
  Mid(ask);
  asm volatile("" ::: "memory");
}
__attribute__((noinline, visibility("default"))) void StackTrailTestViaY(Ask* ask) {
  volatile int tag = 2;
  (void)tag;
  Mid(ask);
  asm volatile("" ::: "memory");
}
}

// Mid, more frames below the op than a trail keeps.
__attribute__((noinline)) void Deep(Ask* ask, int depth) {
  if (depth == 0) {
    Mid(ask);
  } else {
    Deep(ask, depth - 1);
  }
  asm volatile("" ::: "memory");
}
// Realigned through a DRAP register (over-aligned locals plus alloca, as in
// libtorch's AVX kernels): a step through it also reads its CFA from a
// stack slot, so fewer steps than a trail keeps fill its words.
__attribute__((noinline)) void DeepRealigned(Ask* ask, int depth, int size) {
  alignas(32) volatile char aligned[32] = {};
  auto* dynamic = static_cast<volatile char*>(__builtin_alloca(size));
  dynamic[0] = aligned[0];
  if (depth == 0) {
    Mid(ask);
  } else {
    DeepRealigned(ask, depth - 1, size);
  }
  asm volatile("" ::: "memory");
}
extern "C" {
__attribute__((noinline, visibility("default"))) void StackTrailTestDeep(Ask* ask) {
  Deep(ask, StackTrail::kMaxSteps);
  asm volatile("" ::: "memory");
}
__attribute__((noinline, visibility("default"))) void StackTrailTestDeepRealigned(Ask* ask) {
  volatile int size = 64;
  DeepRealigned(ask, StackTrail::kMaxWords / 3 + 1, size);
  asm volatile("" ::: "memory");
}
}

using Via = void (*)(Ask*);

// The op's entry capture, the first time.
__attribute__((noinline)) void TakeAnchorOnce(Anchor* anchor) {
  if (anchor->count == 0) {
    anchor->count = Unwinder(UnwinderKind::kCfiCache)
                        .CaptureWithStackPointers(anchor->pcs, anchor->sps, kMaxNativeDepth);
  }
  asm volatile("" ::: "memory");
}

// Stands in for an op: its entry takes the anchor, then a call inside it
// goes through `via`. No branch before that call: GCC for AArch64 made two
// call instructions of one behind a branch, and calls from the two return
// to different addresses.
__attribute__((noinline)) void OpBody(Anchor* anchor, Via via, Ask* ask) {
  TakeAnchorOnce(anchor);
  Via volatile call = via;
  call(ask);
  asm volatile("" ::: "memory");
}

class StackTrailTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!UnwinderAvailable(UnwinderKind::kCfiCache)) GTEST_SKIP() << "no cfi rules here";
    ask_.anchor = &anchor_;
    ask_.trail = &trail_;
  }

  Anchor anchor_;
  StackTrail trail_;
  Ask ask_;
};

TEST_F(StackTrailTest, DescribesTheStackACaptureFromTheSameFrameGives) {
  // The anchor is taken in the first call; the op's frames stay the same
  // for the second (one loop, one call instruction).
  volatile int calls = 2;
  for (int i = 0; i < calls; ++i) OpBody(&anchor_, &StackTrailTestViaX, &ask_);
  ASSERT_TRUE(ask_.result);
  ASSERT_GT(anchor_.count, 2);
  // Probe's caller frame, Mid, ViaX, then OpBody's frames: a step and a
  // return address each, and this file keeps frame pointers, so each
  // step but the first computes from the rbp the one before restored.
  const StackTrailFrames& frames = ask_.frames;
  ASSERT_GE(frames.count, 4);
  EXPECT_GE(trail_.words, frames.count);
#if defined(__x86_64__)
  EXPECT_GE(trail_.words, 2 * frames.count - 3) << "saved rbp words missing";
#endif
  ASSERT_EQ(ask_.use.anchor, 0);
  // The capture: the anchor's frames [0, copied), then the walked ones,
  // innermost last. The trail: its frames innermost first, its last two
  // the anchor's frames met + 1 and met.
  const int last = frames.count - 1;
  EXPECT_EQ(frames.pcs[last], anchor_.pcs[trail_.met]);
  EXPECT_EQ(frames.sps[last], anchor_.sps[trail_.met]);
  EXPECT_EQ(frames.pcs[last - 1], anchor_.pcs[trail_.met + 1]);
  EXPECT_EQ(frames.sps[last - 1], anchor_.sps[trail_.met + 1]);
  const int outer = trail_.met + 2;
  const int inner = frames.count - 2;
  ASSERT_EQ(ask_.count, outer + inner);
  for (int i = 0; i < outer; ++i) {
    EXPECT_EQ(ask_.pcs[i], anchor_.pcs[i]) << i;
    EXPECT_EQ(ask_.sps[i], anchor_.sps[i]) << i;
  }
  for (int i = 0; i < inner; ++i) {
    EXPECT_EQ(ask_.pcs[ask_.count - 1 - i], frames.pcs[i]) << i;
    EXPECT_EQ(ask_.sps[ask_.count - 1 - i], frames.sps[i]) << i;
  }
}

TEST_F(StackTrailTest, HoldsOnlyWhileEveryFrameToTheAnchorIsTheSame) {
  const Via vias[] = {&StackTrailTestViaX, &StackTrailTestViaX, &StackTrailTestViaY,
                      &StackTrailTestViaX};
  const Action actions[] = {Action::kRecord, Action::kCheck, Action::kCheck, Action::kCheck};
  bool results[4] = {};
  volatile int calls = 4;
  for (int i = 0; i < calls; ++i) {
    ask_.action = actions[i];
    OpBody(&anchor_, vias[i], &ask_);
    results[i] = ask_.result;
  }
  EXPECT_TRUE(results[0]);   // recorded through ViaX
  EXPECT_TRUE(results[1]);   // ViaX again: the same frames
  EXPECT_FALSE(results[2]);  // ViaY: one return address differs
  EXPECT_TRUE(results[3]);   // ViaX once more

  // The same frames against another activation of the op (its frames at
  // other stack addresses): not the anchor the trail met.
  Anchor moved = anchor_;
  moved.sps[trail_.met] += 64;
  ask_.anchor = &moved;
  ask_.action = Action::kCheck;
  OpBody(&moved, &StackTrailTestViaX, &ask_);
  EXPECT_FALSE(ask_.result);
}

TEST_F(StackTrailTest, RecordsNothingWithoutAnAnchorOnTheWay) {
  OpBody(&anchor_, &StackTrailTestViaX, &ask_);
  ASSERT_TRUE(ask_.result);
  // Frames no walk meets (other stack addresses): no trail, and an empty
  // trail holds nowhere.
  Anchor elsewhere = anchor_;
  for (int i = 0; i < elsewhere.count; ++i) elsewhere.sps[i] += 8;
  ask_.anchor = &elsewhere;
  OpBody(&elsewhere, &StackTrailTestViaX, &ask_);
  EXPECT_FALSE(ask_.result);
  EXPECT_EQ(trail_.words, 0);
  ask_.action = Action::kCheck;
  ask_.anchor = &anchor_;
  OpBody(&anchor_, &StackTrailTestViaX, &ask_);
  EXPECT_FALSE(ask_.result);
  // Nor does a walk longer than a trail keeps: more steps than it keeps
  // (two words each, a return address and a saved rbp, fit in its words).
  ask_.action = Action::kRecord;
  OpBody(&anchor_, &StackTrailTestDeep, &ask_);
  EXPECT_EQ(ask_.record, StackTrailRecord::kTooManySteps);
}

// Fewer steps than a trail keeps, each reading three words or more: the
// words are what it runs out of, and it says so (the statistics tell the
// two limits apart).
TEST_F(StackTrailTest, SaysWhenItRanOutOfWordsBeforeSteps) {
  OpBody(&anchor_, &StackTrailTestDeepRealigned, &ask_);
  bool realigned = false;
  for (int i = 0; i < ask_.frames.count; ++i) {
    realigned = realigned || CachedCfiRule(ask_.frames.pcs[i] - 1).cfa_loaded;
  }
  if (!realigned) GTEST_SKIP() << "the compiler did not realign through a DRAP register";
  EXPECT_EQ(ask_.record, StackTrailRecord::kTooManyWords);
  EXPECT_LT(ask_.frames.count, StackTrail::kMaxSteps);
}

// An anchor not known to be live (the previous op's entry capture, as an
// op entry meets it): the trail describes the same stack as a capture
// against it, and holds only while the anchor's frames outer of the two it
// met still hold their return addresses where the anchor read them.
TEST_F(StackTrailTest, AgainstAnAnchorNotLiveChecksItsOuterFramesToo) {
  struct Call {
    Action action;
    Via via;
    bool stale_outer;
    bool live;
  };
  const Call calls[] = {
      {Action::kRecord, &StackTrailTestViaX, false, false},  // 0: recorded
      {Action::kCheck, &StackTrailTestViaX, false, false},   // 1: the same frames
      {Action::kCheck, &StackTrailTestViaY, false, false},   // 2: one differs
      {Action::kCheck, &StackTrailTestViaX, true, false},    // 3: an outer frame moved
      {Action::kCheck, &StackTrailTestViaX, true, true},     // 4: live: taken at its word
  };
  bool results[5] = {};
  // One call instruction for all of them, no branch before it.
  volatile int n = 5;
  for (int i = 0; i < n; ++i) {
    ask_.action = calls[i].action;
    ask_.live = calls[i].live;
    ask_.stale_outer = calls[i].stale_outer;
    OpBody(&anchor_, calls[i].via, &ask_);
    results[i] = ask_.result;
  }
  // The record's capture and trail frames stay in ask_ (checks keep them).
  ASSERT_TRUE(results[0]);
  const StackAnchor not_live{anchor_.pcs, anchor_.sps, anchor_.count, /*live=*/false};
  EXPECT_TRUE(
      StackTrailDescribes(trail_, ask_.frames, not_live, ask_.pcs, ask_.sps, ask_.count));
  ASSERT_GT(trail_.met, 0) << "no anchor frame outer of the two met";
  EXPECT_TRUE(results[1]);
  EXPECT_FALSE(results[2]);
  EXPECT_FALSE(results[3]);
  EXPECT_TRUE(results[4]);
}

}  // namespace
}  // namespace deepcontext::native
