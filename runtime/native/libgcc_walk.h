// libgcc's unwinder for captures that meet an anchor, and the anchor
// frames shared with native_stack.cc's own walk. Internal to dc_native.
#ifndef DEEPCONTEXT_RUNTIME_NATIVE_LIBGCC_WALK_H_
#define DEEPCONTEXT_RUNTIME_NATIVE_LIBGCC_WALK_H_

#include <cstdint>

namespace deepcontext::native::internal {

// Frames of an earlier capture a walk may meet (CaptureWithin): outermost
// first, with their stack addresses. `met` is set to the index of the
// outermost frame the walk wrote no copy of, when it stopped there.
struct AnchorFrames {
  const uintptr_t* pcs = nullptr;
  const uintptr_t* sps = nullptr;
  int count = 0;
  // Not known to be live (see StackAnchor::live): a meeting point counts
  // only once every outer frame's return address is found where it was.
  bool verify = false;
  // Outermost frames shared with a live anchor (StackAnchor::live_prefix).
  int live_prefix = 0;
  int met = -1;
  // Set by CaptureFrom: the anchor's frames [0, copied) begin the output.
  int copied = 0;
};

// backtrace() for a capture with an anchor, stopping where WalkCfiRules
// would; -1 when libgcc's entry points are missing.
int LibgccUntilAnchor(void** out, int max, AnchorFrames* anchor);

}  // namespace deepcontext::native::internal

#endif  // DEEPCONTEXT_RUNTIME_NATIVE_LIBGCC_WALK_H_
