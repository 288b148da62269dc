// Recent stack walks of the cfi-cache unwinder, replayed instead of stepped
// again. Internal to dc_native (native_stack.cc's WalkCfiRules).
//
// A walk is a chain of states {return address pc, frame address sp, rbp}:
// each step looks up pc's rule (cfi_rules.h), computes the caller's frame
// address from sp or rbp and reads the return address where it was saved
// (right below it on x86-64, in the callee's frame on AArch64), plus the
// CFA word or the saved rbp when the rule says so. Given a state, a step is
// a function of the rule of pc (fixed per pc: the rule cache never changes
// one) and of the words it reads. So a recorded step that starts from the
// same state and finds the same words at the same addresses ends in the
// same state, whatever the rule (rsp- or rbp-based, loaded CFA): replaying
// checks those words (one to three loads whose addresses are known ahead,
// no rule lookup, no dependent chain) and falls back to stepping at the
// first word that differs. The same op launching the same kernels through
// the same code step after step replays its whole walk.
//
// Steps are kept in segments keyed by the state they start from: the
// walk's first state, the state a step reached after a recorded one no
// longer held (the branch: a different caller), or the state where a
// segment ended (a walk that stopped at an anchor there before). One
// thread's memo: fixed size (sizeof(WalkMemo): 324 KiB on x86-64, 389 KiB
// on AArch64, whose steps also keep where the return address was), on the
// heap, no allocation after its creation.
//
// Sized for a training step's distinct walks: ResNet-50's step keeps
// 190-330 segments (its GPU calls walk 18 frames through the driver before
// they meet their op's frames). A step replays them in the same
// order each time, so a ring smaller than that, or two of them sharing a
// direct-mapped slot, lost every one of them before it came round again: up
// to a quarter of its steps went back to the rules.
#ifndef DEEPCONTEXT_RUNTIME_NATIVE_WALK_MEMO_H_
#define DEEPCONTEXT_RUNTIME_NATIVE_WALK_MEMO_H_

#include <cstdint>

#include "runtime/native/cfi_rules.h"

namespace deepcontext::native::internal {

// Where a walk stands: the return address and the stack address of its
// frame (the CFA of its callee). rbp is checked per step (WalkStep).
struct WalkState {
  uintptr_t pc = 0;
  uintptr_t sp = 0;
  bool operator==(const WalkState& other) const { return pc == other.pc && sp == other.sp; }
};

// One recorded step: the state it reached and the words it read there.
// sp == 0: the rule of the step's pc ends the stack (nothing read). pc ==
// 0: the return address read was 0, which ends the walk too.
//
// rbp is no part of a state's identity: code without frame pointers keeps
// anything in it (a loop counter, a tensor's address), so keying on it, or
// checking the rbp a step restores, would miss where the walk does not
// care. A step that computes an address from rbp (CFA from rbp, or rbp
// saved below rbp) keeps the rbp it used in fp_in and holds only with that
// rbp; a step that restores rbp reads it again from fp_slot, as stepping by
// rule does; every other step leaves rbp as it was.
struct WalkStep {
  static constexpr int32_t kNoSlot = INT32_MIN;
  uintptr_t pc = 0;
  uintptr_t sp = 0;
  uintptr_t fp_in = 0;  // rbp the step computed from; 0: it used none
  // Offsets from sp of the word the CFA was loaded from (a DRAP frame) and
  // of the saved rbp; kNoSlot when the rule read none.
  int32_t cfa_slot = kNoSlot;
  int32_t fp_slot = kNoSlot;
#if defined(__aarch64__)
  // The frame's stack address (the return address's slot plus 8, in the
  // frame the step left) from sp; on x86-64 it is sp itself.
  int32_t key_offset = 0;
#endif
};

// The stack address the walk gives the frame a recorded step reached
// (cfi_walk.cc's key), and recording it; false when it does not fit.
inline uintptr_t StepKey(const WalkStep& step) {
#if defined(__aarch64__)
  return step.sp + static_cast<intptr_t>(step.key_offset);
#else
  return step.sp;
#endif
}
inline bool SetStepKey(WalkStep* step, uintptr_t key) {
#if defined(__aarch64__)
  const auto difference = static_cast<int64_t>(key - step->sp);
  if (difference <= INT32_MIN || difference > INT32_MAX) return false;
  step->key_offset = static_cast<int32_t>(difference);
  return true;
#else
  return key == step->sp;
#endif
}

// Replays `step`, recorded from the return address and stack address a
// walk is at now, with rbp *fp: false (and *fp unchanged) unless the rbp it
// computed from is the same and the words it read to find the caller are
// unchanged; then *fp is the caller's rbp. Its addresses were on this
// thread's stack [low, high) when recorded, and are checked again before
// any load: a step only ever reads that stack, even from a memo a signal
// handler's capture left half written.
__attribute__((always_inline, no_sanitize("address"))) inline bool ReplayStep(
    const WalkStep& step, uintptr_t* fp, uintptr_t low, uintptr_t high) {
  if (step.sp == 0) return true;
  // Loads written out here, not in a lambda: a lambda is a function of its
  // own, which AddressSanitizer builds would instrument.
  const uintptr_t top = high - sizeof(uintptr_t);
  const uintptr_t ret_slot = StepKey(step) - sizeof(uintptr_t);
  const uintptr_t cfa_slot = step.sp + static_cast<intptr_t>(step.cfa_slot);
  const uintptr_t fp_slot = step.sp + static_cast<intptr_t>(step.fp_slot);
  const bool has_cfa_slot = step.cfa_slot != WalkStep::kNoSlot;
  const bool has_fp_slot = step.fp_slot != WalkStep::kNoSlot;
  if (ret_slot < low || ret_slot > top || (has_cfa_slot && (cfa_slot < low || cfa_slot > top)) ||
      (has_fp_slot && (fp_slot < low || fp_slot > top))) [[unlikely]] {
    return false;
  }
  bool same = CodeAddress(*reinterpret_cast<const uintptr_t*>(ret_slot)) == step.pc;
  same &= step.fp_in == 0 || step.fp_in == *fp;
  if (has_cfa_slot) same &= *reinterpret_cast<const uintptr_t*>(cfa_slot) == step.sp;
  if (!same) return false;
  if (has_fp_slot) *fp = *reinterpret_cast<const uintptr_t*>(fp_slot);
  return true;
}

// Segments of recorded steps in a ring, found by their first state through
// a direct-mapped index; the walk being recorded goes to a separate buffer
// first, so replaying never reads steps being overwritten.
class WalkMemo {
 public:
  WalkMemo() = default;
  ~WalkMemo() { Flush(); }
  WalkMemo(const WalkMemo&) = delete;
  WalkMemo& operator=(const WalkMemo&) = delete;

  static constexpr int kRingSteps = 8192;
  static constexpr int kIndexBits = 11;  // index slots, in sets of kWays
  static constexpr int kWays = 2;
  static constexpr int kMaxRecorded = 128;  // longer walks keep their first steps

  // The first index slot of the set a segment starting at `state` goes to.
  // [tests: which starts share a set]
  static uint64_t SetOf(const WalkState& state);

  // The steps recorded from `start`, or nullptr; *count is their number.
  const WalkStep* Find(const WalkState& start, int* count) const;

  // Starts recording the steps a walk takes from `start`, discarding an
  // unfinished recording.
  void BeginRecording(const WalkState& start) {
    recording_start_ = start;
    recorded_ = 0;
    recording_ = true;
    growing_ = true;
  }
  bool recording() const { return recording_; }
  // Keeps one more step; past kMaxRecorded (or when a slot offset does not
  // fit) the recording stops growing and keeps what it has.
  void Record(const WalkStep& step) {
    if (growing_ && recorded_ < kMaxRecorded) recorded_steps_[recorded_++] = step;
  }
  // Keeps the steps recorded so far and no more (a step WalkStep cannot
  // describe).
  void StopGrowing() { growing_ = false; }
  // Publishes the recorded steps (if any) under their start state.
  [[gnu::cold]] void Commit();
  // A walk's end: commits its recording, counts the steps it replayed and
  // stepped by rule (added to the process's counters every kFlushWalks
  // walks: an atomic add per walk would cost more than a replayed step).
  void EndWalk(int replayed, int stepped) {
    steps_replayed_ += static_cast<uint64_t>(replayed);
    steps_stepped_ += static_cast<uint64_t>(stepped);
    // Both rare in a steady run, whose walks replay: kept off the lines the
    // walk's own code runs on.
    if (recording_) [[unlikely]] Commit();
    if (++walks_ % kFlushWalks == 0) [[unlikely]] Flush();
  }
  static constexpr uint64_t kFlushWalks = 64;
  // Adds this thread's counts not yet added to the process's.
  [[gnu::cold]] void Flush();

  // Segments published and steps replayed on this thread, for tests.
  uint64_t segments_published() const { return published_; }
  uint64_t steps_replayed() const { return steps_replayed_; }

 private:
  struct IndexSlot {
    WalkState start;
    uint64_t position = 0;  // of the first step in the ring, counting all writes
    int32_t count = 0;      // 0: empty slot
  };
  // Whether the ring still holds the segment `slot` points to.
  bool Holds(const IndexSlot& slot) const {
    return slot.count != 0 && written_ - slot.position <= kRingSteps;
  }

  // A set's slots share a cache line: a lookup reads one line.
  static_assert(sizeof(IndexSlot) * kWays == 64, "one set per line");
  alignas(64) IndexSlot index_[1 << kIndexBits];
  WalkStep ring_[kRingSteps];
  uint64_t written_ = 0;  // ring steps written so far (positions are below)
  WalkStep recorded_steps_[kMaxRecorded];
  WalkState recording_start_;
  int recorded_ = 0;
  bool recording_ = false;
  bool growing_ = false;
  uint64_t published_ = 0;
  uint64_t steps_replayed_ = 0;
  uint64_t steps_stepped_ = 0;
  uint64_t walks_ = 0;
  uint64_t flushed_replayed_ = 0;
  uint64_t flushed_stepped_ = 0;
};

// What the memos of all threads did: segments published (each a walk that
// met new frames), steps replayed and steps taken by rule (the last two
// flushed every WalkMemo::kFlushWalks walks of a thread).
struct WalkMemoCounters {
  uint64_t segments = 0;
  uint64_t replayed = 0;
  uint64_t stepped = 0;
};
WalkMemoCounters WalkMemoTotals();

}  // namespace deepcontext::native::internal

#endif  // DEEPCONTEXT_RUNTIME_NATIVE_WALK_MEMO_H_
