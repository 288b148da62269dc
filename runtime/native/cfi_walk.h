// The cfi-cache unwinder's walk: frame to frame by cached .eh_frame rules
// (cfi_rules.h), stopping where the stack meets an anchor (an earlier
// capture of the thread) and replaying the thread's recent walks
// (walk_memo.h). Internal to dc_native (native_stack.cc).
#ifndef DEEPCONTEXT_RUNTIME_NATIVE_CFI_WALK_H_
#define DEEPCONTEXT_RUNTIME_NATIVE_CFI_WALK_H_

#include <cstdint>

#include "runtime/native/cfi_rules.h"
#include "runtime/native/libgcc_walk.h"
#include "runtime/native/native_stack.h"
#include "runtime/native/walk_memo.h"

namespace deepcontext::native::internal {

struct StackBounds {
  uintptr_t low = 0;
  uintptr_t high = 0;
  bool known = false;
  bool queried = false;
};

// The calling thread's stack range, looked up once per thread
// (pthread_getattr_np reads /proc/self/maps for the main thread).
const StackBounds& ThreadStackBounds();

// Up to this many anchors per walk: the op's and the thread's previous
// capture.
inline constexpr int kMaxAnchors = 2;

// Room for one capture's raw frames, innermost first, before they are
// ordered outermost first (native_stack.cc's CaptureFrom): the frames of
// that file between its entry points and the unwinder, the ones a caller
// skips, and kMaxNativeDepth more. `held` while a capture uses it.
struct RawCapture {
  static constexpr int kInternalSlack = 16;
  static constexpr int kMaxSkip = 64;
  static constexpr int kCapacity = kMaxNativeDepth + kInternalSlack + kMaxSkip;
  void* pcs[kCapacity];
  uintptr_t sps[kCapacity];
  bool held = false;
};

// A thread's unwinding state: its rules, its memo of recent walks and the
// room its captures unwind into, one heap block behind one thread-local
// pointer (cfi_rule_cache.cc). A capture looks it up once and hands the
// rules and the memo to WalkCfiRules.
struct ThreadUnwindState {
  CfiThreadCache rules;
  WalkMemo memo;
  RawCapture capture;
};

// The calling thread's state, made on first use; nullptr while the thread
// exits.
ThreadUnwindState* ThisThreadUnwindState();

// Whether the word at `addr` lies inside this thread's stack [low, high):
// the only memory a walk reads.
inline bool OnStack(uintptr_t addr, uintptr_t low, uintptr_t high) {
  return addr >= low && addr + sizeof(uintptr_t) <= high;
}

// The stack address a walk gives the frame `start` names, above the slot
// its return address is read from: its CFA on x86-64, the end of its frame
// record {x29, x30} on AArch64.
inline uintptr_t CallerFrameKey(const CallerFrame& start) {
#if defined(__aarch64__)
  return start.record_end;
#else
  return start.cfa;
#endif
}

// Whether `start` holds its return address where a walk reads it, on this
// thread's stack [low, high): the condition for a walk to begin there.
__attribute__((always_inline, no_sanitize("address"))) inline bool CallerFrameInPlace(
    const CallerFrame& start, uintptr_t low, uintptr_t high) {
  const uintptr_t slot = CallerFrameKey(start) - sizeof(uintptr_t);
  return OnStack(slot, low, high) &&
         CodeAddress(*reinterpret_cast<const uintptr_t*>(slot)) == start.pc;
}

// The innermost of anchor frames [from, below) (outermost first, as
// captured) whose return address is no longer stored where the anchor saw
// it (pcs[i] at sps[i] - 8: a frame's stack address is its return
// address's slot plus 8), checked innermost first; -1 when all still are.
// An anchor's stack addresses rise toward index 0 (each frame's is above
// its callee's), except for a tail of zeros where an unwinder without them
// took over: the two ends bound them all on this stack [low, high), and
// ends outside it count as frame below - 1 moved. Needs from < below.
__attribute__((always_inline, no_sanitize("address"))) inline int FirstMovedAnchorFrame(
    const uintptr_t* pcs, const uintptr_t* sps, int from, int below, uintptr_t low,
    uintptr_t high) {
  if (sps[below - 1] < low + sizeof(uintptr_t) || sps[from] > high) return below - 1;
  for (int i = below - 1; i >= from; --i) {
    if (CodeAddress(*reinterpret_cast<const uintptr_t*>(sps[i] - sizeof(uintptr_t))) != pcs[i]) {
      return i;
    }
  }
  return -1;
}

enum class RuleStep { kStepped, kEnd, kFailed };

// Where a step by rule leads: the caller's frame (its sp, stack address
// and frame pointer) and return address.
struct RuleStepResult {
  RuleStep outcome = RuleStep::kFailed;
  uintptr_t sp = 0;
  uintptr_t key = 0;
  uintptr_t fp = 0;
  uintptr_t ret = 0;
};

// One step from the frame of `pc` (at `sp`, with frame pointer `fp`) by its
// cached rule, where no recorded walk replays it; the step is recorded where
// `memo` records, and written to `made` when given (kFailed where a
// WalkStep cannot describe it). kEnd where the rule ends the stack, kFailed
// where the rule is not modelled or leads off this thread's stack [low,
// high).
RuleStepResult StepByRule(CfiThreadCache& rules, WalkMemo* memo, uintptr_t low, uintptr_t high,
                          uintptr_t pc, uintptr_t sp, uintptr_t fp, WalkStep* made);

// Return addresses from the caller of WalkCfiRules outward (innermost
// first), or from `start` (Unwinder::CaptureNear) when it is a frame outer
// of this one, with each frame's stack address in `sps` when given; -1 when
// a frame needs a rule that is not modelled (the caller then unwinds with
// libgcc), or without `rules`. With anchors, stops where the stack meets
// one and sets its `met` (see the definition). `rules` and `memo` are the
// thread's (ThisThreadUnwindState); without a memo no walk is replayed.
int WalkCfiRules(void** out, uintptr_t* sps, int max, AnchorFrames* const* anchors,
                 int anchor_count, CfiThreadCache* rules, WalkMemo* memo,
                 const CallerFrame* start = nullptr);

}  // namespace deepcontext::native::internal

#endif  // DEEPCONTEXT_RUNTIME_NATIVE_CFI_WALK_H_
