// A walk from a caller frame to the frames of an earlier capture that is
// still running (a live anchor: the entry capture of the op a GPU call is
// made in), kept so that the next call from the same frame in the same op
// can prove the stack between them unchanged by reading again the words
// the walk read, in one tight loop, instead of unwinding it again.
//
// The proof is the walk memo's (walk_memo.h): a step from a given state
// that finds the same words at the same addresses reaches the same state.
// The trail starts at the caller frame, which the caller's key pins (its
// return address and CFA). By induction every step then starts from the
// recorded state, so the words each step read are all there is to check:
// the return address, the CFA word of a DRAP frame, and the saved rbp
// where a later step computes from rbp (or the caller frame's own rbp,
// where a step computes from it before any is restored). The frames it
// ends on must be two consecutive frames of the anchor given now, at the
// same index as when recorded. The stack outer of them is the anchor's, as
// for any walk that meets a live anchor (Unwinder::CaptureNear).
#ifndef DEEPCONTEXT_RUNTIME_NATIVE_STACK_TRAIL_H_
#define DEEPCONTEXT_RUNTIME_NATIVE_STACK_TRAIL_H_

#include <cstdint>

#include "runtime/native/native_stack.h"

namespace deepcontext::native {

struct StackTrail {
  // Longer walks are not kept. A GPU call inside an op walks 15 to 18
  // frames on the MLP and ResNet-50 before it meets an earlier capture
  // (docs/OVERHEAD.md), and further to the op's entry capture; through
  // frames whose CFA comes from rbp a step reads two words.
  static constexpr int kMaxSteps = 48;
  static constexpr int kMaxWords = 96;
  struct Word {
    uintptr_t address = 0;
    uintptr_t value = 0;
  };
  int words = 0;  // 0: none recorded
  int met = -1;   // the anchor index of the frame it ended on
  // The caller frame it starts at.
  uintptr_t start_pc = 0;
  uintptr_t start_cfa = 0;
  // A step computed from the caller frame's rbp before any was restored:
  // then it must be `fp` again.
  bool uses_start_fp = false;
  uintptr_t start_fp = 0;
  // The range of the words read: inside the thread's stack.
  uintptr_t lowest = 0;
  uintptr_t highest = 0;
  // The two frames it met the anchor at: anchor frames met + 1 and met.
  uintptr_t inner_pc = 0;
  uintptr_t inner_key = 0;
  uintptr_t outer_pc = 0;
  uintptr_t outer_key = 0;
  Word word[kMaxWords];
};

// A trail's frames from its caller frame outward, innermost first, the two
// it met the anchor at included (RecordStackTrail).
struct StackTrailFrames {
  uintptr_t pcs[StackTrail::kMaxSteps + 1];
  uintptr_t sps[StackTrail::kMaxSteps + 1];
  int count = 0;
};

enum class StackTrailRecord : uint8_t {
  kRecorded = 0,
  kTooManySteps = 1,  // no anchor met within kMaxSteps steps
  kFailed = 2,        // no cfi rules, an unmodelled rule, the stack's end, no anchor
  kTooManyWords = 3,  // more than kMaxWords words read before it met one
};

// Records the cfi-cache walk from `start` (a frame of a function still
// running on this thread, outer of this call) outward, up to the first two
// consecutive frames that are consecutive frames of `anchor`; its frames go
// to `frames` when given. kFailed where there is no such trail: no cfi
// rules in this process, a frame whose rule is not modelled, or the stack's
// end before meeting the anchor. For an anchor not known to be live the
// frames outer of the meeting point are not checked here: keep a trail
// only where StackTrailDescribes the stack an unwind gave. Steps by rule:
// not for a hot path.
StackTrailRecord RecordStackTrail(const CallerFrame& start, const StackAnchor& anchor,
                                  StackTrail* trail, StackTrailFrames* frames = nullptr);

// Whether this thread's stack, from `start` (the frame `trail` was
// recorded from: the same return address and CFA), still holds every word
// the trail's walk read, and the frames it ends at are frames met + 1 and
// met of `anchor`; for an anchor not known to be live, whether the
// anchor's frames outer of them also still hold their return addresses
// where it read them. Where it does, the stack is the trail's frames
// (innermost first, the last two excepted) followed, outward, by the
// anchor's frames [0, met + 1].
bool StackTrailHolds(const StackTrail& trail, const CallerFrame& start, const StackAnchor& anchor);

// Whether the stack a recorded trail describes (the anchor's frames
// [0, met + 1], then the trail's inner frames outward in) is the `count`
// frames of `pcs`/`sps` (outermost first), return addresses and stack
// addresses alike: the check before a trail is kept for an unwind's answer.
bool StackTrailDescribes(const StackTrail& trail, const StackTrailFrames& frames,
                         const StackAnchor& anchor, const uintptr_t* pcs, const uintptr_t* sps,
                         int count);

}  // namespace deepcontext::native

#endif  // DEEPCONTEXT_RUNTIME_NATIVE_STACK_TRAIL_H_
