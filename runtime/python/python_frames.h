// Reads the calling thread's Python frames without taking the GIL.
//
// Op callbacks (torch RecordFunction) and GPU API callbacks run with the GIL
// released, on a thread that is blocked inside native code: its own frame
// chain cannot change while we read it and its code objects are kept alive by
// those frames. We therefore walk CPython's internal frame structs directly,
// using per-version layouts (layouts/cpython_3_*.h) selected once at start.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace deepcontext::python {

// One captured frame. (code, lasti) identify the call site; `ident` is a
// cheap fingerprint of the code object (name/filename/firstlineno) so that a
// code object freed and replaced at the same address is not mistaken for the
// old one. `entry` marks the first (outermost) frame of one activation of
// the bytecode loop (_PyEval_EvalFrameDefault): every frame on 3.9/3.10,
// frames entered from C on 3.11+ (Python-to-Python calls run in the
// caller's activation there). It lets native stacks be merged with Python
// frames (runtime/native/python_splice.h).
struct RawFrame {
  const void* code = nullptr;
  int32_t lasti = 0;  // byte offset of the current instruction
  uint32_t ident = 0;
  bool entry = false;
  // Same call site; `entry` is derived from the stack around the frame and
  // not part of its identity.
  bool operator==(const RawFrame& other) const {
    return code == other.code && lasti == other.lasti && ident == other.ident;
  }
};

struct FrameInfo {
  std::string function;  // qualified name where the version has one
  std::string file;
  int line = 0;
};

// Detects the CPython version of this process. An error outside a Python
// process or for versions without a layout says which, for the profile's
// status line; the other functions then capture nothing.
// [any thread] Idempotent; call once before the other functions.
Status Initialize();

// "3.12.1" etc., or "" before a successful Initialize.
const char* VersionString();

// Captures up to `max` frames of the calling thread, OUTERMOST FIRST (the
// order a calling context tree is walked). Returns the number written; 0 when
// the thread has no Python frames (autograd or other native threads). When the
// stack is deeper than `max`, the innermost `max` frames are kept.
// [any thread, GIL not needed] Allocation-free. With `thread_state`, also
// says which thread state the frames came from (nullptr when none).
int CaptureCurrentThread(RawFrame* out, int max, const void** thread_state = nullptr);

// The same from a thread state an earlier capture on this thread returned,
// without looking it up again (a thread-specific key read behind two calls
// into the interpreter). Only while a frame that capture saw is still
// running: the state lives at least as long as its frames.
// [the capturing thread, GIL not needed] Allocation-free.
int CaptureThread(const void* thread_state, RawFrame* out, int max);

// The thread's innermost frame record, as an identity only (it may be a
// frame CPython hides; nullptr: none). While a frame that a capture on this
// thread saw still runs, finding the record the capture found innermost
// means that no frame runs above it: a frame cannot return while a native
// call it made, the one reading this, has not. Cheaper than a one-frame
// CaptureThread, which reads the frame and its code object.
// [the capturing thread, GIL not needed]
const void* InnermostFrame(const void* thread_state);

// Resolves function, file and line of a captured frame. The code object must
// still be alive, i.e. call this while the frame is still on the capturing
// thread's stack. [any thread, GIL not needed] Never calls into Python.
bool Resolve(const RawFrame& frame, FrameInfo* out);

}  // namespace deepcontext::python
