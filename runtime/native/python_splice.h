// Merges a native stack with the Python frames of the same thread.
//
// In a native stack, CPython shows up as its C frames: a run of interpreter
// functions around each activation of the bytecode loop,
// _PyEval_EvalFrameDefault. The Python frames it is executing are what the
// user wants to see there. Splicing replaces each loop activation by the
// Python frames it runs and drops the other interpreter frames (calling
// conventions, vectorcall, _PyEval_Vector, PyEval_EvalCode, ...).
//
// Which Python frames belong to which activation:
//  - 3.10 and older: each Python frame has its own loop activation.
//  - 3.11 and newer: a Python-to-Python call is executed by the same
//    activation, which starts at an "entry" frame (3.11: is_entry set; 3.12+:
//    the frame right after a FRAME_OWNED_BY_CSTACK shim). The frames from one
//    entry frame up to the next entry frame belong to one activation.
// Both cases are expressed by one per-frame `entry` flag (set on every frame
// for 3.10 and older), which the Python frame reader provides.
//
// Both stacks may be cut on the outer side (depth limits, an unwinder that
// stops at a frame without unwind info), never on the inner side, so the
// activations are matched from the innermost end. Unmatched outer Python
// frames are placed above the outermost native frame; unmatched loop
// activations stay as native frames.
#pragma once

#include <cstdint>

namespace deepcontext::native {

// What a native frame is, with respect to the Python interpreter.
enum class NativeFrameClass : uint8_t {
  kOther = 0,        // user, framework or library code: kept
  kEvalLoop = 1,     // _PyEval_EvalFrameDefault: replaced by Python frames
  kInterpreter = 2,  // other interpreter internals: dropped
};

// One frame of a merged path: an index into the native or the Python input.
struct SplicedFrame {
  enum class Source : uint8_t { kNative = 0, kPython = 1 };
  Source source = Source::kNative;
  int index = 0;
  bool operator==(const SplicedFrame&) const = default;
};

struct SpliceOptions {
  // Keep kInterpreter frames (for debugging the interpreter itself).
  bool keep_interpreter_frames = false;
};

// Merges native frames (classes[0..native_count), outermost first) with
// Python frames (python_entry[0..python_count), outermost first; true marks
// the first frame of a loop activation) into out[0..capacity), outermost
// first, and returns the number written. When the result would not fit, its
// innermost `capacity` frames are kept. [any thread] Allocation-free.
int SplicePythonFrames(const NativeFrameClass* classes, int native_count,
                       const bool* python_entry, int python_count,
                       const SpliceOptions& options, SplicedFrame* out,
                       int capacity);

// Address ranges of the interpreter in this process, to classify pcs.
class InterpreterRanges {
 public:
  // Up to this many distinct eval-loop ranges (the function and its
  // compiler-split .cold part, in one or two interpreter copies).
  static constexpr int kMaxEvalRanges = 8;

  // Finds _PyEval_EvalFrameDefault with dlsym and its extent from the
  // symbol table, and the module that holds it (libpython or the python
  // executable). Returns false outside a Python process. Not
  // async-signal-safe; call once at start-up.
  bool Detect();

  // Adds [begin, end) as an eval-loop range; false when full.
  bool AddEvalRange(uintptr_t begin, uintptr_t end);

  // Marks [begin, end) as interpreter code (frames there are dropped).
  void SetInterpreterRange(uintptr_t begin, uintptr_t end);

  // Classifies a return address (looks at pc - 1, the call site).
  NativeFrameClass Classify(uintptr_t pc) const;

  // Classifies pcs[0..count) into classes[0..count).
  void ClassifyAll(const uintptr_t* pcs, int count,
                   NativeFrameClass* classes) const;

  int eval_range_count() const { return eval_count_; }

 private:
  struct Range {
    uintptr_t begin = 0;
    uintptr_t end = 0;
  };
  Range eval_[kMaxEvalRanges];
  int eval_count_ = 0;
  Range interpreter_;
};

// The address range [*begin, *end) of the function named `symbol` visible
// through dlsym (exported or in the dynamic symbol table), using the
// symbol's size. False when not found or without a size.
bool FindFunctionRange(const char* symbol, uintptr_t* begin, uintptr_t* end);

}  // namespace deepcontext::native
