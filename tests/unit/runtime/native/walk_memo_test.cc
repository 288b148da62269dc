// The cfi-cache unwinder's memo of recent walks (runtime/native/walk_memo.h):
// a capture that replays recorded steps must give what libgcc gives, on a
// repeated stack and on stacks that differ from a recorded one only in
// words the steps read (the same leaf through another caller at the same
// stack addresses, rbp-based and DRAP frames), and the memo stays bounded.
#include "runtime/native/walk_memo.h"

#include <alloca.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <vector>

#include "runtime/native/cfi_rules.h"
#include "runtime/native/cfi_walk.h"
#include "runtime/native/native_stack.h"

namespace deepcontext::native {
namespace {

using internal::ReplayStep;
using internal::WalkMemo;
using internal::WalkState;
using internal::WalkStep;

struct Frames {
  uintptr_t pcs[kMaxNativeDepth];
  uintptr_t sps[kMaxNativeDepth];
  int count = 0;
};

// One capture point, run with both unwinders.
struct Probe {
  Frames cfi;
  Frames libgcc;
  int drap_size = 0;     // DrapFrame's alloca, when on the path
  int alloca_size = 0;   // AllocaFrame's
};

// Both unwinders from one frame: everything but the innermost return
// address (two call sites here) must be the same.
__attribute__((noinline)) void Leaf(Probe& probe) {
  static const Unwinder cfi(UnwinderKind::kCfiCache);
  static const Unwinder libgcc(UnwinderKind::kGlibcBacktrace);
  probe.cfi.count = cfi.CaptureWithStackPointers(probe.cfi.pcs, probe.cfi.sps, kMaxNativeDepth);
  probe.libgcc.count = libgcc.Capture(probe.libgcc.pcs, kMaxNativeDepth, 0);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void Inner(Probe& probe) {
  Leaf(probe);
  asm volatile("" ::: "memory");
}

// Two callers of Inner with the same frame layout: Leaf and Inner run at
// the same stack addresses through either, and only the return address in
// Inner's frame tells the two stacks apart.
__attribute__((noinline)) void PathA(Probe& probe) {
  Inner(probe);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void PathB(Probe& probe) {
  asm volatile("nop" ::: "memory");  // not folded into PathA
  Inner(probe);
  asm volatile("" ::: "memory");
}

// CFA from rbp: the frames inner of it move with the alloca.
__attribute__((noinline)) void AllocaFrame(Probe& probe) {
  char* block = static_cast<char*>(alloca(probe.alloca_size));
  block[0] = 1;
  asm volatile("" ::"r"(block) : "memory");
  Inner(probe);
  asm volatile("" ::: "memory");
}

// Over-aligned locals plus alloca: GCC realigns the stack through a DRAP
// register, so the CFA is loaded from the stack and rbp saved below rbp.
__attribute__((noinline)) void DrapFrame(Probe& probe) {
  alignas(64) volatile char aligned[64];
  aligned[0] = 1;
  char* block = static_cast<char*>(alloca(probe.drap_size));
  block[0] = 1;
  asm volatile("" ::"r"(block), "r"(aligned) : "memory");
  AllocaFrame(probe);
  asm volatile("" ::: "memory");
}

void ExpectSameAsLibgcc(const Probe& probe) {
  ASSERT_GT(probe.cfi.count, 3);
  ASSERT_EQ(probe.cfi.count, probe.libgcc.count);
  for (int i = 0; i + 1 < probe.cfi.count; ++i) {
    EXPECT_EQ(probe.cfi.pcs[i], probe.libgcc.pcs[i]) << "frame " << i;
  }
}

std::vector<uintptr_t> Pcs(const Frames& frames) {
  return std::vector<uintptr_t>(frames.pcs, frames.pcs + frames.count);
}

// The calling thread's memo (in its unwinding state, made on first use).
WalkMemo* ThisThreadMemo() {
  internal::ThreadUnwindState* state = internal::ThisThreadUnwindState();
  return state != nullptr ? &state->memo : nullptr;
}

class WalkMemoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!UnwinderAvailable(UnwinderKind::kCfiCache)) GTEST_SKIP() << "no cfi-cache here";
    ASSERT_NE(ThisThreadMemo(), nullptr);
  }
  static uint64_t Replayed() { return ThisThreadMemo()->steps_replayed(); }
};

// Called from one call site of a loop whose bound the compiler cannot see
// (an unrolled loop would be several call sites): the frames of every
// round are the same up to the first one.
volatile int g_rounds = 3;

TEST_F(WalkMemoTest, RepeatedStackIsReplayed) {
  Probe probes[3];
  uint64_t befores[3] = {};
  // No branch on the round in the loop: a compiler that peels a round off
  // calls PathA from two places.
  for (int round = 0; round < g_rounds; ++round) {
    befores[round] = Replayed();
    PathA(probes[round]);
  }
  const uint64_t before = befores[2];
  for (const Probe& probe : probes) ExpectSameAsLibgcc(probe);
  EXPECT_EQ(Pcs(probes[1].cfi), Pcs(probes[0].cfi));
  EXPECT_EQ(Pcs(probes[2].cfi), Pcs(probes[0].cfi));
  // Every step of the last walk replayed, this file's frames and the
  // unwinder's own included.
  EXPECT_GE(Replayed() - before, static_cast<uint64_t>(probes[2].cfi.count));
}

__attribute__((noinline)) void RoundAB(Probe& a, Probe& b) {
  PathA(a);
  PathB(b);
  asm volatile("" ::: "memory");
}

TEST_F(WalkMemoTest, SameLeafThroughAnotherCallerIsNotReplayedAsTheFirst) {
  Probe a;
  Probe b;
  uint64_t published = 0;
  uint64_t before = 0;
  for (int round = 0; round < g_rounds; ++round) {
    if (round == 2) {
      published = ThisThreadMemo()->segments_published();
      before = Replayed();
    }
    RoundAB(a, b);
    ExpectSameAsLibgcc(a);
    ExpectSameAsLibgcc(b);
  }
  // The case the memo must tell apart: the same return addresses at the
  // same stack addresses up to Inner's frame, a different one in it.
  ASSERT_EQ(a.cfi.count, b.cfi.count);
  const int inner = a.cfi.count - 3;  // Leaf's, Inner's, then PathA's/PathB's
  EXPECT_EQ(a.cfi.pcs[inner + 1], b.cfi.pcs[inner + 1]);
  EXPECT_EQ(a.cfi.sps[inner + 1], b.cfi.sps[inner + 1]);
  EXPECT_EQ(a.cfi.sps[inner], b.cfi.sps[inner]);
  EXPECT_NE(a.cfi.pcs[inner], b.cfi.pcs[inner]);
  EXPECT_NE(Pcs(a.cfi), Pcs(b.cfi));
  // Both walks were in the memo in the last round: each capture replayed
  // (B's but the step where it leaves A's), none recorded.
  EXPECT_EQ(ThisThreadMemo()->segments_published(), published);
  EXPECT_GE(Replayed() - before, static_cast<uint64_t>(a.cfi.count + b.cfi.count - 1));
}

TEST_F(WalkMemoTest, FramesWithCfaFromRbpOrLoadedMatchLibgcc) {
  // Sizes that move the inner frames and sizes that repeat, in turn.
  const int sizes[][2] = {{64, 32}, {64, 32}, {64, 544}, {1088, 32}, {64, 32}, {1088, 544}};
  Probe probe;
  [[maybe_unused]] bool saw_loaded = false;
  bool saw_rbp = false;
  std::vector<uintptr_t> reference;
  for (int i = 0; i < static_cast<int>(std::size(sizes)); ++i) {
    const auto& size = sizes[i];
    probe.drap_size = size[0];
    probe.alloca_size = size[1];
    const uint64_t before = Replayed();
    DrapFrame(probe);
    ExpectSameAsLibgcc(probe);
    // The same sizes again: the whole walk replays, through the frames
    // whose CFA comes from rbp or from the stack.
    if (i == 1) {
      EXPECT_GE(Replayed() - before, static_cast<uint64_t>(probe.cfi.count));
    }
    if (size[0] == 64 && size[1] == 32) {
      if (reference.empty()) reference = Pcs(probe.cfi);
      EXPECT_EQ(Pcs(probe.cfi), reference);
    }
    for (int i = 0; i < probe.cfi.count; ++i) {
      const CfiRule rule = CachedCfiRule(probe.cfi.pcs[i] - 1);
      saw_loaded |= rule.kind == CfiRule::Kind::kStep && rule.cfa_loaded;
      saw_rbp |= rule.kind == CfiRule::Kind::kStep && rule.cfa_from_frame_pointer &&
                 !rule.cfa_loaded;
    }
  }
  // The walk really went through both kinds of frames (GCC realigns
  // through a DRAP register on x86-64 only).
#if defined(__x86_64__)
  EXPECT_TRUE(saw_loaded);
#endif
  EXPECT_TRUE(saw_rbp);
}

// A recorded step against a stack of eight words: it holds only with the
// words it read to find the caller unchanged, the rbp it computed from,
// and every address inside the stack's bounds; the rbp it restores is
// whatever the stack holds now (no later step trusts it unchecked).
TEST(WalkStepTest, HoldsOnlyWithItsWordsAndRbp) {
  uintptr_t stack[8] = {};
  const auto low = reinterpret_cast<uintptr_t>(&stack[0]);
  const auto high = reinterpret_cast<uintptr_t>(&stack[8]);
  const auto cfa = reinterpret_cast<uintptr_t>(&stack[4]);
  stack[3] = 0x401234;  // the return address below the CFA
  stack[1] = cfa;       // the word the CFA was loaded from (DRAP)
  stack[6] = 0x7000;    // the saved rbp
  const WalkStep step{0x401234, cfa, /*fp_in=*/0x5000, -3 * 8, 2 * 8};
  auto replay = [&](const WalkStep& s, uintptr_t fp, uintptr_t top = 0) {
    const bool held = ReplayStep(s, &fp, low, top != 0 ? top : high);
    return held ? fp : uintptr_t{0};
  };
  EXPECT_EQ(replay(step, 0x5000), 0x7000u);
  EXPECT_EQ(replay(step, 0x5008), 0u);  // another rbp to compute from
  stack[3] = 0x401238;
  EXPECT_EQ(replay(step, 0x5000), 0u);  // another caller
  stack[3] = 0x401234;
  stack[1] = cfa + 8;
  EXPECT_EQ(replay(step, 0x5000), 0u);  // the CFA moved
  stack[1] = cfa;
  stack[6] = 0x7008;
  EXPECT_EQ(replay(step, 0x5000), 0x7008u);  // rbp restored as it is now
  // Addresses outside the stack are never read.
  WalkStep outside = step;
  outside.fp_slot = 8 * 8;
  EXPECT_EQ(replay(outside, 0x5000), 0u);
  EXPECT_EQ(replay(step, 0x5000, cfa), 0u);
  // A step that used no rbp holds whatever rbp is, and leaves it.
  const WalkStep sp_relative{0x401234, cfa, 0, WalkStep::kNoSlot, WalkStep::kNoSlot};
  EXPECT_EQ(replay(sp_relative, 0x1234), 0x1234u);
  // The rule of the pc ended the stack: nothing to read.
  EXPECT_EQ(replay(WalkStep{}, 0x1234), 0x1234u);
}

// The process's counters (DEEPCONTEXT_NATIVE_STATS=1 prints them) get a
// thread's replayed steps within kFlushWalks walks.
TEST_F(WalkMemoTest, ReplayedStepsReachTheProcessCounters) {
  Probe probe;
  const internal::WalkMemoCounters before = internal::WalkMemoTotals();
  for (uint64_t walk = 0; walk < 2 * WalkMemo::kFlushWalks; ++walk) PathA(probe);
  ExpectSameAsLibgcc(probe);
  const internal::WalkMemoCounters after = internal::WalkMemoTotals();
  // One cfi-cache walk per round, all but the first replayed in full; at
  // most kFlushWalks - 1 of them not flushed yet.
  EXPECT_GE(after.replayed - before.replayed,
            static_cast<uint64_t>(probe.cfi.count) * (WalkMemo::kFlushWalks - 1));
  EXPECT_GE(after.segments, before.segments);
}

TEST(WalkMemoBoundsTest, OldSegmentsGoAndTheMemoKeepsItsSize) {
  // 324 KiB on x86-64; AArch64's steps also keep their return address's
  // slot (WalkStep::key_offset).
  static_assert(sizeof(WalkMemo) < 400 * 1024, "a thread's memo stays small");
  auto memo = std::make_unique<WalkMemo>();
  auto record = [&](uintptr_t key, int steps) {
    memo->BeginRecording(WalkState{key, key + 8});
    for (int i = 0; i < steps; ++i) {
      memo->Record(WalkStep{key + 16 + static_cast<uintptr_t>(i), key + 64 + 8 * i, 0,
                            WalkStep::kNoSlot, WalkStep::kNoSlot});
    }
    memo->Commit();
  };
  int count = 0;
  record(0x1000, 10);
  const WalkStep* first = memo->Find(WalkState{0x1000, 0x1008}, &count);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(count, 10);
  EXPECT_EQ(first[9].pc, 0x1000u + 16 + 9);
  EXPECT_EQ(memo->Find(WalkState{0x1000, 0x1010}, &count), nullptr);  // another sp
  // Longer walks keep their first kMaxRecorded steps.
  record(0x2000, WalkMemo::kMaxRecorded + 40);
  ASSERT_NE(memo->Find(WalkState{0x2000, 0x2008}, &count), nullptr);
  EXPECT_EQ(count, WalkMemo::kMaxRecorded);
  // A turn of the ring later the first segment is gone, the newest kept.
  for (int i = 0; i < WalkMemo::kRingSteps / 16 + 1; ++i) {
    record(0x100000 + 0x1000 * static_cast<uintptr_t>(i), 16);
  }
  EXPECT_EQ(memo->Find(WalkState{0x1000, 0x1008}, &count), nullptr);
  EXPECT_EQ(memo->Find(WalkState{0x2000, 0x2008}, &count), nullptr);
  const uintptr_t last = 0x100000 + 0x1000 * static_cast<uintptr_t>(WalkMemo::kRingSteps / 16);
  ASSERT_NE(memo->Find(WalkState{last, last + 8}, &count), nullptr);
  EXPECT_EQ(count, 16);
  // Nothing recorded: nothing published.
  const uint64_t published = memo->segments_published();
  memo->BeginRecording(WalkState{0x9000, 0x9008});
  memo->Commit();
  EXPECT_EQ(memo->segments_published(), published);
  EXPECT_EQ(memo->Find(WalkState{0x9000, 0x9008}, &count), nullptr);
}

// Records a segment of `steps` steps from `start`, each step's pc tagged
// with `tag` so that a later recording from the same start tells apart.
void RecordSegment(WalkMemo& memo, const WalkState& start, int steps, uintptr_t tag = 0) {
  memo.BeginRecording(start);
  for (int i = 0; i < steps; ++i) {
    memo.Record(WalkStep{start.pc + tag + static_cast<uintptr_t>(i), start.sp + 64 + 8 * i, 0,
                         WalkStep::kNoSlot, WalkStep::kNoSlot});
  }
  memo.Commit();
}

// Starts of one index set: the same return address at other stack
// addresses, as one helper called at several depths.
std::vector<WalkState> StartsOfOneSet(int count) {
  std::vector<WalkState> starts;
  const WalkState first{0x7f0000401234, 0x7ffc00010000};
  starts.push_back(first);
  for (uintptr_t sp = first.sp + 16; static_cast<int>(starts.size()) < count; sp += 16) {
    const WalkState state{first.pc, sp};
    if (WalkMemo::SetOf(state) == WalkMemo::SetOf(first)) starts.push_back(state);
  }
  return starts;
}

TEST(WalkMemoBoundsTest, StartsSharingASetAreKeptUpToItsWays) {
  static_assert(WalkMemo::kWays == 2, "the steps below fill a set of two");
  auto memo = std::make_unique<WalkMemo>();
  const std::vector<WalkState> starts = StartsOfOneSet(3);
  int count = 0;
  RecordSegment(*memo, starts[0], 5);
  RecordSegment(*memo, starts[1], 6);
  // Two segments of one set: both found, each with its own steps.
  const WalkStep* a = memo->Find(starts[0], &count);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(count, 5);
  EXPECT_EQ(a[0].pc, starts[0].pc);
  ASSERT_NE(memo->Find(starts[1], &count), nullptr);
  EXPECT_EQ(count, 6);
  // Recorded again from the same start (its walk diverged): replaces its
  // own slot, the other segment of the set stays.
  RecordSegment(*memo, starts[0], 7, /*tag=*/0x100);
  a = memo->Find(starts[0], &count);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(count, 7);
  EXPECT_EQ(a[0].pc, starts[0].pc + 0x100);
  ASSERT_NE(memo->Find(starts[1], &count), nullptr);
  EXPECT_EQ(count, 6);
  // A third start takes the oldest segment's slot (starts[1]'s, recorded
  // before starts[0]'s second).
  RecordSegment(*memo, starts[2], 4);
  EXPECT_EQ(memo->Find(starts[1], &count), nullptr);
  ASSERT_NE(memo->Find(starts[0], &count), nullptr);
  EXPECT_EQ(count, 7);
  ASSERT_NE(memo->Find(starts[2], &count), nullptr);
  EXPECT_EQ(count, 4);
}

// A training step walks the same few hundred segments in the same order
// each time: when the ring or the index could not hold them all, each was
// gone before the next step came round to it (ResNet-50's step:
// 190-330 segments).
TEST(WalkMemoBoundsTest, AStepsSegmentsAreAllFoundTheNextStep) {
  auto memo = std::make_unique<WalkMemo>();
  std::vector<WalkState> starts;
  for (int i = 0; i < 330; ++i) {
    starts.push_back(WalkState{0x7f0000400000 + 0x40 * static_cast<uintptr_t>(i % 37),
                               0x7ffc00010000 + 0x30 * static_cast<uintptr_t>(i)});
  }
  std::map<uint64_t, int> per_set;
  for (const WalkState& start : starts) ++per_set[WalkMemo::SetOf(start)];
  for (int step = 0; step < 3; ++step) {
    for (const WalkState& start : starts) {
      int count = 0;
      const WalkStep* steps = memo->Find(start, &count);
      if (steps == nullptr) {
        // The first step records each; later ones only those of sets
        // holding more starts than ways.
        EXPECT_TRUE(step == 0 || per_set[WalkMemo::SetOf(start)] > WalkMemo::kWays)
            << "step " << step << ", start sp " << std::hex << start.sp;
        RecordSegment(*memo, start, 12);
      } else {
        EXPECT_EQ(count, 12);
        EXPECT_EQ(steps[11].pc, start.pc + 11);
      }
    }
  }
  // Most starts have a set to themselves or share it with one other.
  int fitting = 0;
  for (const WalkState& start : starts) {
    fitting += per_set[WalkMemo::SetOf(start)] <= WalkMemo::kWays ? 1 : 0;
  }
  EXPECT_GE(fitting, 300);
}

}  // namespace
}  // namespace deepcontext::native
