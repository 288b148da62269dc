#include "runtime/native/stack_trail.h"

#include <algorithm>

#include "runtime/common/hot_path.h"
#include "runtime/native/cfi_rules.h"
#include "runtime/native/cfi_walk.h"

namespace deepcontext::native {
namespace {

using internal::StepKey;
using internal::WalkStep;

// The index of the anchor frame with this return address at this stack
// address, or -1.
int AnchorIndex(const StackAnchor& anchor, uintptr_t pc, uintptr_t key) {
  for (int j = 0; j < anchor.count; ++j) {
    if (anchor.sps[j] == key && anchor.pcs[j] == pc) return j;
  }
  return -1;
}

// Adds the word at `address` (on this thread's stack) to the trail; false
// when the trail is full (Record then says kTooManyWords).
__attribute__((no_sanitize("address"))) bool AddWord(StackTrail* trail, uintptr_t address) {
  if (trail->words >= StackTrail::kMaxWords) return false;
  const uintptr_t value = *reinterpret_cast<const uintptr_t*>(address);
  trail->word[trail->words++] = StackTrail::Word{address, value};
  trail->lowest = trail->words == 1 ? address : std::min(trail->lowest, address);
  trail->highest = std::max(trail->highest, address);
  return true;
}

StackTrailRecord Record(const CallerFrame& start, const StackAnchor& anchor,
                        StackTrail* trail, StackTrailFrames* frames) {
  constexpr StackTrailRecord kFailed = StackTrailRecord::kFailed;
  constexpr StackTrailRecord kTooManyWords = StackTrailRecord::kTooManyWords;
  if (start.pc == 0 || start.cfa == 0) return kFailed;
  if (anchor.pcs == nullptr || anchor.sps == nullptr || anchor.count < 2) return kFailed;
  if (!CfiRulesSupported()) return kFailed;
  const internal::StackBounds& bounds = internal::ThreadStackBounds();
  if (!bounds.known) return kFailed;
  internal::ThreadUnwindState* const thread = internal::ThisThreadUnwindState();
  if (thread == nullptr) return kFailed;
  const uintptr_t low = bounds.low;
  const uintptr_t high = bounds.high;
  // A walk begins at the caller frame only where it holds its return
  // address, as WalkCfiRules requires of a start.
  uintptr_t key = internal::CallerFrameKey(start);
  if (!internal::CallerFrameInPlace(start, low, high) ||
      !AddWord(trail, key - sizeof(uintptr_t))) {
    return kFailed;
  }
  trail->start_pc = start.pc;
  trail->start_cfa = start.cfa;
  uintptr_t pc = start.pc;
  uintptr_t sp = start.cfa;
  uintptr_t fp = start.fp;
  // Where the rbp the next step may compute from was restored from (0: it
  // is the caller frame's), and whether that word is among the trail's.
  uintptr_t fp_slot = 0;
  bool fp_slot_kept = false;
  if (frames != nullptr) {
    frames->pcs[0] = pc;
    frames->sps[0] = key;
    frames->count = 1;
  }
  int previous = AnchorIndex(anchor, pc, key);
  for (int n = 0; n < StackTrail::kMaxSteps; ++n) {
    WalkStep step;
    const internal::RuleStepResult next =
        internal::StepByRule(thread->rules, nullptr, low, high, pc, sp, fp, &step);
    if (next.outcome != internal::RuleStep::kStepped || next.ret == 0) return kFailed;
    if (step.fp_in != 0) {
      if (fp_slot == 0) {
        trail->uses_start_fp = true;
        trail->start_fp = start.fp;
      } else if (!fp_slot_kept) {
        if (!AddWord(trail, fp_slot)) return kTooManyWords;
        fp_slot_kept = true;
      }
    }
    if (step.cfa_slot != WalkStep::kNoSlot &&
        !AddWord(trail, step.sp + static_cast<intptr_t>(step.cfa_slot))) {
      return kTooManyWords;
    }
    if (!AddWord(trail, StepKey(step) - sizeof(uintptr_t))) return kTooManyWords;
    if (step.fp_slot != WalkStep::kNoSlot) {
      fp_slot = step.sp + static_cast<intptr_t>(step.fp_slot);
      fp_slot_kept = false;
    }
    const uintptr_t inner_pc = pc;
    const uintptr_t inner_key = key;
    sp = next.sp;
    key = next.key;
    fp = next.fp;
    pc = next.ret;
    if (frames != nullptr) {
      frames->pcs[frames->count] = pc;
      frames->sps[frames->count] = key;
      ++frames->count;
    }
    // Met as a walk meets an anchor: this frame and the one before it are
    // consecutive anchor frames.
    const int match = AnchorIndex(anchor, pc, key);
    if (match >= 0 && previous == match + 1) {
      trail->met = match;
      trail->inner_pc = inner_pc;
      trail->inner_key = inner_key;
      trail->outer_pc = pc;
      trail->outer_key = key;
      return StackTrailRecord::kRecorded;
    }
    previous = match;
  }
  return StackTrailRecord::kTooManySteps;
}

}  // namespace

StackTrailRecord RecordStackTrail(const CallerFrame& start, const StackAnchor& anchor,
                                  StackTrail* trail, StackTrailFrames* frames) {
  *trail = StackTrail{};
  if (frames != nullptr) frames->count = 0;
  const StackTrailRecord record = Record(start, anchor, trail, frames);
  if (record != StackTrailRecord::kRecorded) {
    trail->words = 0;
    trail->met = -1;
  }
  return record;
}

DEEPCONTEXT_HOT
__attribute__((no_sanitize("address"))) bool StackTrailHolds(const StackTrail& trail,
                                                             const CallerFrame& start,
                                                             const StackAnchor& anchor) {
  const int words = trail.words;
  const int met = trail.met;
  if (words <= 0 || met < 0 || met + 1 >= anchor.count || start.pc != trail.start_pc ||
      start.cfa != trail.start_cfa) {
    return false;
  }
  // The words were on this thread's stack when recorded; a thread that
  // took over another's state (and so its trails) may have a stack
  // elsewhere, and then reads none of them.
  const internal::StackBounds& bounds = internal::ThreadStackBounds();
  if (!bounds.known || trail.lowest < bounds.low ||
      trail.highest + sizeof(uintptr_t) > bounds.high) {
    return false;
  }
  if (trail.uses_start_fp && start.fp != trail.start_fp) return false;
  // All loads, then one test: their addresses are known ahead and none
  // depends on another.
  uintptr_t differ = 0;
  for (int i = 0; i < words; ++i) {
    differ |= *reinterpret_cast<const uintptr_t*>(trail.word[i].address) ^ trail.word[i].value;
  }
  if (differ != 0) return false;
  if (anchor.pcs[met] != trail.outer_pc || anchor.sps[met] != trail.outer_key ||
      anchor.pcs[met + 1] != trail.inner_pc || anchor.sps[met + 1] != trail.inner_key) {
    return false;
  }
  if (anchor.live || met == 0) return true;
  // An anchor not known to be live: its frames outer of the two met must
  // still hold their return addresses where it read them, as a walk that
  // meets such an anchor checks (cfi_walk.cc).
  return internal::FirstMovedAnchorFrame(anchor.pcs, anchor.sps, 0, met, bounds.low,
                                         bounds.high) < 0;
}

bool StackTrailDescribes(const StackTrail& trail, const StackTrailFrames& frames,
                         const StackAnchor& anchor, const uintptr_t* pcs, const uintptr_t* sps,
                         int count) {
  // The last two trail frames are the anchor's met + 1 and met.
  const int outer = trail.met + 2;
  const int inner = frames.count - 2;
  if (trail.words == 0 || frames.count < 2 || outer > anchor.count || count != outer + inner) {
    return false;
  }
  for (int i = 0; i < outer; ++i) {
    if (pcs[i] != anchor.pcs[i] || sps[i] != anchor.sps[i]) return false;
  }
  for (int i = 0; i < inner; ++i) {
    if (pcs[count - 1 - i] != frames.pcs[i] || sps[count - 1 - i] != frames.sps[i]) return false;
  }
  return true;
}

}  // namespace deepcontext::native
