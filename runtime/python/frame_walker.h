// Walks one thread's CPython frame chain through a FrameLayout.
//
// Split from the dlsym glue (python_frames.cc) so that the walk can be tested
// on synthetic frame chains laid out in plain memory.
#pragma once

#include "runtime/python/frame_layout.h"
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
// version switch.
WalkFunction SelectWalker(FrameFamily family);

// What a thread's last walk of its interpreter frames (3.11+) read, and the
// frames it returned, so that the next walk of an unchanged chain can check
// it instead of reading it again (WalkInterpreterFramesRemembered).
struct WalkMemo {
  static constexpr int kMaxVisits = 640;  // frames visited, shims included
  bool valid = false;
  const void* thread_state = nullptr;
  int max = 0;
  int visits = 0;
  // The walk ended after `max` frames (not on a NULL, implausible or
  // repeated pointer, which `end` then holds).
  bool ended_at_max = false;
  const void* end = nullptr;
  int count = 0;
  // Per frame visited, innermost first: its address and the fields the
  // walk's decisions depend on (the code object's own fields never change).
  const void* frame[kMaxVisits];
  const void* code[kMaxVisits];
  const void* instr[kMaxVisits];
  char owner[kMaxVisits];
  char is_entry[kMaxVisits];
  RawFrame out[kMaxVisits];  // the result, outermost first
};

// The interpreter-frame walk (FrameFamily::kInterpreterFrame) of
// `thread_state`, through the calling thread's `memo` of its last walk:
// when the chain still holds the same frames with the same code, position,
// owner and links, the result is the memo's, and only the frames themselves
// are read (no code object, no fingerprint hash, and loads the CPU can issue
// ahead of the links they follow, since the memo says where they lead).
// Otherwise a full walk, remembered. Ops entered from one Python loop see
// the same chain again and again. Reads only frames of the live chain: a
// remembered frame is read only once the link to it was found unchanged.
int WalkInterpreterFramesRemembered(const FrameLayout& layout, const void* code_type,
                                    const void* thread_state, RawFrame* out, int max,
                                    WalkMemo& memo);

}  // namespace deepcontext::python
