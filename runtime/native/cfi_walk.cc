#include "runtime/native/cfi_walk.h"

#include <climits>
#include <cstdint>

#include "runtime/common/hot_path.h"
#include "runtime/native/cfi_rules.h"
#include "runtime/native/walk_memo.h"

namespace deepcontext::native::internal {
namespace {

// A walk's position in one anchor (WalkCfiRules). The anchor's arrays are
// copied in: kept in locals, the walk's stores to its output (which may
// alias them, as far as the compiler knows) no longer make every frame
// reload them and the cursor from memory.
struct AnchorCursor {
  AnchorFrames* anchor = nullptr;
  const uintptr_t* pcs = nullptr;
  const uintptr_t* sps = nullptr;
  bool verify = false;
  // Frames [0, checked_from) need no check: they are outer of two
  // consecutive frames shared with a live anchor (AnchorFrames::live_prefix).
  int checked_from = 0;
  int next = -1;      // innermost anchor frame not below the walk
  int previous = -1;  // the anchor index the walk's last frame matched
  // Index of the frame whose return address was found changed, -1 while
  // none was: no meeting point of this walk can be the anchor's frames after
  // one was.
  int changed = -1;
};

AnchorCursor CursorOn(AnchorFrames* anchor) {
  AnchorCursor cursor;
  if (anchor == nullptr) return cursor;
  cursor.anchor = anchor;
  cursor.pcs = anchor->pcs;
  cursor.sps = anchor->sps;
  cursor.verify = anchor->verify;
  cursor.checked_from = anchor->live_prefix > 2 ? anchor->live_prefix - 2 : 0;
  cursor.next = anchor->count - 1;
  return cursor;
}

// Whether the return addresses of anchor frames [0, below) are still
// stored where the anchor saw them (FirstMovedAnchorFrame); records the
// first changed one. Frames
// outer of the anchor's last two shared with a live anchor are not read:
// those two in place, they are in place as well.
__attribute__((always_inline, no_sanitize("address"))) inline bool StillInPlace(
    AnchorCursor& cursor, int below, uintptr_t low, uintptr_t high) {
  // Once a frame was found changed, no later meeting point of this walk
  // is taken: meeting points only move outward (below falls) and the stack
  // outer of the walk stays as it is, so the changed frame is either still
  // in [0, below), or the meeting point is outer of it (refused as well: the
  // walk left the anchor's frames in between). Checking again from below - 1
  // down to it at each later meeting point made a walk through a long run
  // of matching frames quadratic (a call through the same helper chain as
  // the previous one, from another call site of the op).
  if (cursor.changed >= 0) return false;
  const int from = cursor.checked_from;
  if (below <= from) return true;
  cursor.changed = FirstMovedAnchorFrame(cursor.pcs, cursor.sps, from, below, low, high);
  return cursor.changed < 0;
}

// Whether the walk's frame (pc at stack address sp) meets the anchor:
// it and the walk's previous frame are consecutive anchor frames (and, for
// an anchor not known to be live, the frames outer of them are in place).
// Anchor frames are outermost first, so their stack addresses fall as the
// index grows; the walk's rise.
__attribute__((always_inline, no_sanitize("address"))) inline bool Meets(
    AnchorCursor& cursor, uintptr_t pc, uintptr_t sp, uintptr_t low, uintptr_t high) {
  int next = cursor.next;
  if (next < 0) return false;
  while (next >= 0 && cursor.sps[next] < sp) --next;
  cursor.next = next;
  const int match = next >= 0 && cursor.sps[next] == sp && cursor.pcs[next] == pc ? next : -1;
  if (match >= 0 && cursor.previous == match + 1 &&
      (!cursor.verify || StillInPlace(cursor, match, low, high))) {
    return true;
  }
  cursor.previous = match;
  return false;
}

// `slot` (0: none) as WalkStep keeps it, an offset from the step's `cfa`;
// false when it does not fit.
bool SlotOffset(uintptr_t slot, uintptr_t cfa, int32_t* offset) {
  if (slot == 0) {
    *offset = WalkStep::kNoSlot;
    return true;
  }
  const auto difference = static_cast<int64_t>(slot - cfa);
  if (difference <= INT32_MIN || difference > INT32_MAX) return false;
  *offset = static_cast<int32_t>(difference);
  return true;
}

}  // namespace

// Out of line, its frame passed by value so that the walk's own stay in
// registers: a walk in a steady run replays nearly every step, and the
// replay loop's code then stays on fewer cache lines.
__attribute__((noinline, no_sanitize("address"))) RuleStepResult StepByRule(
    CfiThreadCache& rules, WalkMemo* const memo, const uintptr_t low, const uintptr_t high,
    const uintptr_t pc, const uintptr_t sp, const uintptr_t fp, WalkStep* const made) {
  RuleStepResult result;
  const CfiRule& rule = CachedCfiRule(rules, pc - 1);
  if (rule.kind == CfiRule::Kind::kEnd) {
    if (memo != nullptr && memo->recording()) memo->Record(WalkStep{});
    if (made != nullptr) *made = WalkStep{};
    result.outcome = RuleStep::kEnd;
    return result;
  }
  if (rule.kind != CfiRule::Kind::kStep) return result;
  WalkStep step;
  if (rule.cfa_from_frame_pointer || (rule.frame_pointer_saved && rule.fp_saved_below_fp)) {
    step.fp_in = fp;
  }
  uintptr_t cfa = (rule.cfa_from_frame_pointer ? fp : sp) + rule.cfa_offset;
  uintptr_t cfa_slot = 0;
  if (rule.cfa_loaded) {
    if (!OnStack(cfa, low, high)) return result;
    cfa_slot = cfa;
    cfa = *reinterpret_cast<const uintptr_t*>(cfa);
  }
  // Every step goes strictly outward and stays on this thread's stack;
  // the return address was saved in the frame it leaves.
  const uintptr_t ret_slot = cfa + ReturnAddressOffset(rule);
  if (cfa <= sp || ret_slot < sp || ret_slot + sizeof(uintptr_t) > cfa ||
      !OnStack(ret_slot, low, high)) {
    return result;
  }
  result.ret = CodeAddress(*reinterpret_cast<const uintptr_t*>(ret_slot));
  result.fp = fp;
  uintptr_t fp_slot = 0;
  if (rule.frame_pointer_saved) {
    const uintptr_t slot = (rule.fp_saved_below_fp ? fp : cfa) + rule.saved_fp_offset;
    if (!OnStack(slot, low, high)) return result;
    fp_slot = slot;
    result.fp = *reinterpret_cast<const uintptr_t*>(slot);
  }
  result.sp = cfa;
  result.key = ret_slot + sizeof(uintptr_t);
  const bool recording = memo != nullptr && memo->recording();
  if (recording || made != nullptr) {
    step.pc = result.ret;
    step.sp = cfa;
    const bool fits = SlotOffset(cfa_slot, cfa, &step.cfa_slot) &&
                      SlotOffset(fp_slot, cfa, &step.fp_slot) && SetStepKey(&step, result.key);
    if (recording) {
      if (fits) {
        memo->Record(step);
      } else {
        memo->StopGrowing();
      }
    }
    if (made != nullptr) {
      if (!fits) return RuleStepResult{};
      *made = step;
    }
  }
  result.outcome = RuleStep::kStepped;
  return result;
}

// Steps from frame to frame with the cached .eh_frame rule of each return
// address (cfi_rules.h). Starts from its own frame record (this file keeps
// frame pointers), so the first address written is the return into its
// caller, as for backtrace(). Writes each frame's stack address to `sps`
// when given: the address above the slot its return address was read from.
// On x86-64 that is the CFA of its callee, as libgcc's _Unwind_GetCFA gives
// it; on AArch64 the slot lies in the callee's frame where its prologue
// saved x30. Either way the addresses rise strictly from frame to frame,
// and a frame's return address can be checked in place (anchors, replays).
// Returns -1 when a frame needs a rule that is not modelled: the caller
// then unwinds with libgcc instead.
//
// With anchors, stops before the first of two consecutive frames that are
// consecutive frames of one anchor (same return address at the same stack
// address), setting that anchor's met to its index: one matching frame
// alone could be a later call through the same instruction of a function
// the anchor's path called too; its caller matching as well pins the frames
// outer of them to the anchor's, as long as the anchor's frames are live.
// For an anchor not known to be live (`verify`), the frames outer of the
// meeting point must also still hold their return addresses where the
// anchor read them, or the walk goes on.
DEEPCONTEXT_HOT
__attribute__((noinline, no_sanitize("address"))) int WalkCfiRules(
    void** out, uintptr_t* sps, int max, AnchorFrames* const* anchors,
    int anchor_count, CfiThreadCache* const rules, WalkMemo* const memo,
    const CallerFrame* const start) {
  const StackBounds& bounds = ThreadStackBounds();
  // Loads are only safe inside a known stack; libgcc checks its own way.
  if (!bounds.known) return -1;
  if (rules == nullptr) return -1;  // the thread is exiting
  // On another stack (sigaltstack, coroutines) every step fails this and
  // the capture goes to libgcc. The bounds are copied: read through the
  // thread-local, every step's stores to `out` and `sps` (which may alias
  // it, as far as the compiler knows) made it fetch the thread-local's
  // address again, a TLS-descriptor call per check.
  const uintptr_t low = bounds.low;
  const uintptr_t high = bounds.high;
  const auto self = reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa());
  uintptr_t pc = CodeAddress(reinterpret_cast<uintptr_t>(__builtin_return_address(0)));
  // sp is the CFA of pc's callee (the stack pointer pc's function had at
  // the call), which rules compute from; key is the frame's stack address.
  uintptr_t sp = self;
  uintptr_t key = self;
  const auto record = reinterpret_cast<const uintptr_t*>(__builtin_frame_address(0));
  uintptr_t fp = record[0];
#if defined(__aarch64__)
  // This function's frame record {x29, x30} is where x29 points.
  key = reinterpret_cast<uintptr_t>(record) + 2 * sizeof(uintptr_t);
  if (!OnStack(key - sizeof(uintptr_t), low, high) || CodeAddress(record[1]) != pc) return -1;
#endif
  const uintptr_t start_key = start != nullptr ? CallerFrameKey(*start) : 0;
  // A given start skips the runtime's own frames between it and here (a
  // step each, replayed or not, at every capture). It is taken only where
  // it is a frame outer of this one that holds its return address where a
  // walk would read it; otherwise the walk starts here, and the caller
  // drops the frames inner of start's pc as before.
  if (start != nullptr && start->pc != 0 && start->cfa > self && start_key > key &&
      CallerFrameInPlace(*start, low, high)) {
    pc = start->pc;
    sp = start->cfa;
    key = start_key;
    fp = start->fp;
  }
  // The first two anchors given, as two cursors in locals.
  AnchorFrames* given[kMaxAnchors] = {};
  for (int a = 0, used = 0; a < anchor_count && used < kMaxAnchors; ++a) {
    if (anchors[a] != nullptr && anchors[a]->count > 0) given[used++] = anchors[a];
  }
  static_assert(kMaxAnchors == 2, "one cursor each");
  AnchorCursor first = CursorOn(given[0]);
  AnchorCursor second = CursorOn(given[1]);
  // Recent walks of this thread (walk_memo.h): replayed where their words
  // still hold, looked up where one may start (the first state, the state
  // after a step that no longer held, a segment's end); the steps taken
  // from a state no segment starts at are recorded.
  const WalkStep* replay = nullptr;
  int replay_left = 0;
  bool look_up = memo != nullptr;
  bool diverged = false;
  int replayed = 0;
  int stepped = 0;
  int n = 0;
  while (n < max) {
    AnchorCursor* met = Meets(first, pc, key, low, high)    ? &first
                        : Meets(second, pc, key, low, high) ? &second
                                                            : nullptr;
    if (met != nullptr) {
      met->anchor->met = met->previous;
      if (memo != nullptr) memo->EndWalk(replayed, stepped);
      asm volatile("" ::: "memory");
      return n - 1;
    }
    out[n] = reinterpret_cast<void*>(pc);
    if (sps != nullptr) sps[n] = key;
    ++n;
    if (look_up) {
      look_up = false;
      int count = 0;
      replay = memo->Find(WalkState{pc, sp}, &count);
      replay_left = replay != nullptr ? count : 0;
      if (replay == nullptr && !memo->recording()) [[unlikely]] {
        memo->BeginRecording(WalkState{pc, sp});
      }
    }
    if (replay_left > 0) {
      const WalkStep& step = *replay;
      if (ReplayStep(step, &fp, low, high)) {
        ++replayed;
        ++replay;
        --replay_left;
        if (step.sp == 0) break;  // the rule of pc ends the stack
        sp = step.sp;
        key = StepKey(step);
        if (step.pc == 0) break;
        pc = step.pc;
        look_up = replay_left == 0;  // another segment may go on from here
        continue;
      }
      // A different caller (or frame) from here: step, then look up where
      // that leads.
      replay_left = 0;
      diverged = true;
    }
    ++stepped;
    const RuleStepResult next = StepByRule(*rules, memo, low, high, pc, sp, fp, nullptr);
    if (next.outcome == RuleStep::kEnd) break;
    if (next.outcome == RuleStep::kFailed) {
      if (memo != nullptr) memo->EndWalk(replayed, stepped);
      return -1;
    }
    sp = next.sp;
    key = next.key;
    fp = next.fp;
    const uintptr_t ret = next.ret;
    if (diverged) {
      diverged = false;
      look_up = true;
    }
    if (ret == 0) break;
    pc = ret;
  }
  if (memo != nullptr) memo->EndWalk(replayed, stepped);
  asm volatile("" ::: "memory");
  return n;
}

}  // namespace deepcontext::native::internal
