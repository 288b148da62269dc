// A walk from a caller frame to the frames of an earlier capture that is
// still running (a live anchor: the entry capture of the op a GPU call is
// made in), kept so that the next call from the same frame in the same op
// can prove the stack between them unchanged by reading the words the walk
// read, in one tight loop, instead of unwinding it again.
//
// The proof is the walk memo's (walk_memo.h): a step from a given state
// that finds the same words at the same addresses reaches the same state.
// The trail starts at the caller frame, which the caller's key pins (its
// return address and CFA), replays every step to the meeting frames, and
// those must be two consecutive frames of the anchor given now, at the
// same index as when recorded. The stack outer of them is the anchor's,
// as for any walk that meets a live anchor (Unwinder::CaptureNear).
#ifndef DEEPCONTEXT_RUNTIME_NATIVE_STACK_TRAIL_H_
#define DEEPCONTEXT_RUNTIME_NATIVE_STACK_TRAIL_H_

#include <cstdint>

#include "runtime/native/native_stack.h"
#include "runtime/native/walk_memo.h"

namespace deepcontext::native {

struct StackTrail {
  // Longer walks are not kept (a GPU call inside an op walks 15 to 18
  // frames on the MLP and ResNet-50: docs/OVERHEAD.md).
  static constexpr int kMaxSteps = 32;
  int count = 0;  // steps from the caller frame; 0: none recorded
  int met = -1;   // the anchor index of the last step's frame
  internal::WalkStep steps[kMaxSteps];
};

// Records the cfi-cache walk from `start` (a frame of a function still
// running on this thread, outer of this call) outward, up to the first two
// consecutive frames that are consecutive frames of `anchor`, which must be
// live. False where there is no such trail: no cfi rules in this process,
// a frame whose rule is not modelled, the stack's end or more than
// kMaxSteps steps before meeting the anchor. Steps by rule: not for a hot
// path.
bool RecordStackTrail(const CallerFrame& start, const StackAnchor& anchor, StackTrail* trail);

// Whether this thread's stack, from `start` (the frame `trail` was
// recorded from: the same return address and CFA), still holds every word
// the trail's steps read, and the frames it ends at are frames met + 1 and
// met of `anchor` (live). Where it does, the stack is the trail's frames
// (innermost first: start, then the frame each step reaches but the last)
// followed, outward, by the anchor's frames [0, met + 1].
bool StackTrailHolds(const StackTrail& trail, const CallerFrame& start, const StackAnchor& anchor);

// The trail's frames from `start` (innermost first, as they were walked),
// the two it met the anchor at included: count + 1 of them. For checking a
// trail against a capture of the same stack.
int StackTrailFrames(const StackTrail& trail, const CallerFrame& start, uintptr_t* pcs,
                     uintptr_t* sps, int max);

}  // namespace deepcontext::native

#endif  // DEEPCONTEXT_RUNTIME_NATIVE_STACK_TRAIL_H_
