// Walks one thread's CPython frame chain through a FrameLayout.
//
// Split from the dlsym glue (python_frames.cc) so that the walk can be tested
// on synthetic frame chains laid out in plain memory.
#pragma once

#include "runtime/python/layouts/frame_layout.h"
#include "runtime/python/python_frames.h"

namespace deepcontext::python {

// Captures up to `max` frames starting at `thread_state` (a PyThreadState*),
// OUTERMOST FIRST, and returns how many were written. When the chain is
// deeper than `max`, the innermost `max` frames are kept. Frames that CPython
// itself hides are skipped: C-stack shim frames (3.12+), frames whose
// executable is not a code object (3.13) and incomplete frames (3.11+,
// still in their prologue). The walk stops early, keeping what it has, at a
// NULL, misaligned or otherwise implausible pointer and on a cycle.
// `code_type` is &PyCode_Type of the running interpreter.
// [any thread] Allocation-free; reads only memory reachable from the chain.
using WalkFunction = int (*)(const FrameLayout& layout, const void* code_type,
                             const void* thread_state, RawFrame* out, int max);

// The walker for `family`, chosen once so that the per-frame loop has no
// version switch. It reads the offsets from the layout it is handed.
WalkFunction SelectWalker(FrameFamily family);

// The walker for `layout`, chosen once: for one of the generated layouts
// (layouts/cpython_3_*.h), by address, a walker compiled with its offsets
// as constants, whose per-frame loop runs about a third fewer
// instructions; for any other layout SelectWalker(layout.family)'s. Either
// must be handed `layout`.
WalkFunction WalkerFor(const FrameLayout& layout);

// The record a walk of `thread_state` starts at: the innermost frame, or
// one CPython hides (a shim). nullptr when the thread has none or the
// pointer to it is implausible. Two loads, none of them into the frame.
// [any thread] Reads only memory reachable from the thread state.
const void* InnermostFrameRecord(const FrameLayout& layout, const void* thread_state);

}  // namespace deepcontext::python
