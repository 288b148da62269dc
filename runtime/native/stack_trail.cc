#include "runtime/native/stack_trail.h"

#include "runtime/common/hot_path.h"
#include "runtime/native/cfi_rules.h"
#include "runtime/native/cfi_walk.h"

namespace deepcontext::native {
namespace {

using internal::OnStack;
using internal::StepKey;
using internal::WalkStep;

// The stack address a walk gives the caller frame (cfi_walk.cc's start
// key): above its return address's slot.
uintptr_t StartKey(const CallerFrame& start) {
#if defined(__aarch64__)
  return start.record_end;
#else
  return start.cfa;
#endif
}

// The index of the anchor frame with this return address at this stack
// address, or -1.
int AnchorIndex(const StackAnchor& anchor, uintptr_t pc, uintptr_t key) {
  for (int j = 0; j < anchor.count; ++j) {
    if (anchor.sps[j] == key && anchor.pcs[j] == pc) return j;
  }
  return -1;
}

bool UsableAnchor(const StackAnchor& anchor) {
  return anchor.pcs != nullptr && anchor.sps != nullptr && anchor.count >= 2 && anchor.live;
}

}  // namespace

__attribute__((no_sanitize("address"))) bool RecordStackTrail(const CallerFrame& start,
                                                              const StackAnchor& anchor,
                                                              StackTrail* trail) {
  trail->count = 0;
  trail->met = -1;
  if (start.pc == 0 || start.cfa == 0 || !UsableAnchor(anchor)) return false;
  if (!CfiRulesSupported()) return false;
  const internal::StackBounds& bounds = internal::ThreadStackBounds();
  if (!bounds.known) return false;
  internal::ThreadUnwindState* const thread = internal::ThisThreadUnwindState();
  if (thread == nullptr) return false;
  const uintptr_t low = bounds.low;
  const uintptr_t high = bounds.high;
  uintptr_t key = StartKey(start);
  // The caller frame holds its return address where a walk reads it, as
  // WalkCfiRules requires of a start.
  if (!OnStack(key - sizeof(uintptr_t), low, high) ||
      CodeAddress(*reinterpret_cast<const uintptr_t*>(key - sizeof(uintptr_t))) != start.pc) {
    return false;
  }
  uintptr_t pc = start.pc;
  uintptr_t sp = start.cfa;
  uintptr_t fp = start.fp;
  int previous = AnchorIndex(anchor, pc, key);
  for (int n = 0; n < StackTrail::kMaxSteps; ++n) {
    WalkStep step;
    const internal::RuleStepResult next =
        internal::StepByRule(thread->rules, nullptr, low, high, pc, sp, fp, &step);
    if (next.outcome != internal::RuleStep::kStepped || next.ret == 0) return false;
    trail->steps[n] = step;
    sp = next.sp;
    key = next.key;
    fp = next.fp;
    pc = next.ret;
    // Met as a walk meets an anchor: this frame and the one before it are
    // consecutive anchor frames.
    const int match = AnchorIndex(anchor, pc, key);
    if (match >= 0 && previous == match + 1) {
      trail->count = n + 1;
      trail->met = match;
      return true;
    }
    previous = match;
  }
  return false;
}

DEEPCONTEXT_HOT
__attribute__((no_sanitize("address"))) bool StackTrailHolds(const StackTrail& trail,
                                                             const CallerFrame& start,
                                                             const StackAnchor& anchor) {
  const int count = trail.count;
  const int met = trail.met;
  if (count <= 0 || met < 0 || met + 1 >= anchor.count) return false;
  const internal::StackBounds& bounds = internal::ThreadStackBounds();
  if (!bounds.known) return false;
  const uintptr_t low = bounds.low;
  const uintptr_t high = bounds.high;
  const uintptr_t start_key = StartKey(start);
  if (!OnStack(start_key - sizeof(uintptr_t), low, high) ||
      CodeAddress(*reinterpret_cast<const uintptr_t*>(start_key - sizeof(uintptr_t))) !=
          start.pc) {
    return false;
  }
  // Every step from the same state finding the same words reaches the same
  // state (walk_memo.h), so the frames are the trail's.
  uintptr_t fp = start.fp;
  for (int i = 0; i < count; ++i) {
    if (!internal::ReplayStep(trail.steps[i], &fp, low, high)) return false;
  }
  const WalkStep& last = trail.steps[count - 1];
  const uintptr_t inner_pc = count >= 2 ? trail.steps[count - 2].pc : start.pc;
  const uintptr_t inner_key = count >= 2 ? StepKey(trail.steps[count - 2]) : start_key;
  return anchor.pcs[met] == last.pc && anchor.sps[met] == StepKey(last) &&
         anchor.pcs[met + 1] == inner_pc && anchor.sps[met + 1] == inner_key;
}

int StackTrailFrames(const StackTrail& trail, const CallerFrame& start, uintptr_t* pcs,
                     uintptr_t* sps, int max) {
  if (trail.count <= 0 || max <= 0) return 0;
  pcs[0] = start.pc;
  sps[0] = StartKey(start);
  int n = 1;
  for (int i = 0; i < trail.count && n < max; ++i, ++n) {
    pcs[n] = trail.steps[i].pc;
    sps[n] = StepKey(trail.steps[i]);
  }
  return n;
}

}  // namespace deepcontext::native
