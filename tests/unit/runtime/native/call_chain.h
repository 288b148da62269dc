// A known chain of calls, ChainA -> ChainB -> ChainC, where ChainC captures
// the native stack. Built without inlining, tail calls or frame-pointer
// omission (see CMakeLists.txt), so every link shows up in every unwinder.
#pragma once

#include <cstdint>

#include "runtime/native/native_stack.h"

namespace native_chain {

struct CaptureRequest {
  // nullptr: CaptureNativeStack (the default unwinder).
  const deepcontext::native::Unwinder* unwinder = nullptr;
  int skip = 0;
};

// Capture through ChainA -> ChainB -> ChainC; returns the frame count.
int ChainA(const CaptureRequest& request, uintptr_t* pcs, int max);
int ChainB(const CaptureRequest& request, uintptr_t* pcs, int max);
int ChainC(const CaptureRequest& request, uintptr_t* pcs, int max);

// Recurses `depth` levels, then captures with `unwinder`; for measuring
// capture cost at a fixed stack depth.
int CaptureAtDepth(const deepcontext::native::Unwinder& unwinder, int depth,
                   uintptr_t* pcs, int max);

// Recurses `depth` levels, then calls fn(arg).
void RunAtDepth(int depth, void (*fn)(void*), void* arg);

}  // namespace native_chain
