// An earlier capture's frames with their stack addresses, as the anchored
// capture tests take it (Unwinder::CaptureWithStackPointers).
#pragma once

#include <cstdint>

#include "runtime/native/native_stack.h"

namespace deepcontext::native::test {

struct Anchor {
  uintptr_t pcs[kMaxNativeDepth];
  uintptr_t sps[kMaxNativeDepth];
  int count = 0;
  // As the op path passes an op's entry capture while the op runs.
  StackAnchor Live() const { return StackAnchor{pcs, sps, count, /*live=*/true}; }
};

}  // namespace deepcontext::native::test
