// The cfi-cache unwinder's walk: frame to frame by cached .eh_frame rules
// (cfi_rules.h), stopping where the stack meets an anchor (an earlier
// capture of the thread) and replaying the thread's recent walks
// (walk_memo.h). Internal to dc_native (native_stack.cc).
#ifndef DEEPCONTEXT_RUNTIME_NATIVE_CFI_WALK_H_
#define DEEPCONTEXT_RUNTIME_NATIVE_CFI_WALK_H_

#include <cstdint>

#include "runtime/native/libgcc_walk.h"

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

// Return addresses from the caller of WalkCfiRules outward (innermost
// first), with each frame's stack address in `sps` when given; -1 when a
// frame needs a rule that is not modelled (the caller then unwinds with
// libgcc). With anchors, stops where the stack meets one and sets its
// `met` (see the definition).
int WalkCfiRules(void** out, uintptr_t* sps, int max, AnchorFrames* const* anchors,
                 int anchor_count);

}  // namespace deepcontext::native::internal

#endif  // DEEPCONTEXT_RUNTIME_NATIVE_CFI_WALK_H_
