#include "runtime/python/frame_walker.h"

#include <algorithm>
#include <climits>

#include "runtime/common/hot_path.h"
#include "runtime/python/layouts/cpython_3_10.h"
#include "runtime/python/layouts/cpython_3_11.h"
#include "runtime/python/layouts/cpython_3_12.h"
#include "runtime/python/layouts/cpython_3_13.h"
#include "runtime/python/layouts/cpython_3_9.h"
#include "runtime/python/object_access.h"

namespace deepcontext::python {
namespace {

// Brent's cycle detection: remembers one frame and compares every later frame
// with it, moving the remembered frame at powers of two. Catches a cycle of
// any length within twice its length for one compare per frame.
class CycleGuard {
 public:
  // Returns false when `frame` was seen before.
  bool Visit(const void* frame) {
    if (frame == saved_) return false;
    if (++steps_ == limit_) {
      saved_ = frame;
      limit_ *= 2;
      steps_ = 0;
    }
    return true;
  }

 private:
  const void* saved_ = nullptr;
  int steps_ = 0;
  int limit_ = 1;
};

int32_t ClampLasti(int64_t lasti) {
  return static_cast<int32_t>(std::clamp<int64_t>(lasti, -1, INT32_MAX));
}

// Frames were collected innermost first; the API returns outermost first.
int Finish(RawFrame* out, int count) {
  std::reverse(out, out + count);
  return count;
}

[[gnu::always_inline]] inline const void* InnermostRecordOver(const FrameLayout& layout,
                                                              const void* thread_state) {
  if (layout.tstate_cframe < 0) return LoadPointer(thread_state, layout.tstate_frame);
  // 3.11 and 3.12: behind the thread's current C frame.
  const void* cframe = LoadPointer(thread_state, layout.tstate_cframe);
  if (!IsPlausiblePointer(cframe)) return nullptr;
  return LoadPointer(cframe, layout.cframe_current_frame);
}

// The two walks below are written once over a FrameLayout and inlined into
// two kinds of walker: one that reads the offsets from the layout it is
// handed, for any layout, and one per generated layout, where the layout is
// a constant and every offset, and every test of a field the version lacks,
// folds into the code. With the offsets read at run time the interpreter-
// frame loop kept a dozen of them on the stack and reloaded them at every
// frame: callgrind counted 94 instructions per frame walked against 67
// (CPython 3.11, x86-64, bench/op_path_callgrind.py).

// 3.9 / 3.10: heap PyFrameObjects linked by f_back; f_lasti counts bytes
// (3.9) or code units (3.10).
[[gnu::always_inline]] inline int WalkFrameObjectsOver(const FrameLayout& layout,
                                                       const void* code_type,
                                                       const void* thread_state,
                                                       RawFrame* out, int max) {
  const int32_t previous_offset = layout.frame_previous;
  const int32_t code_offset = layout.frame_code;
  const int32_t lasti_offset = layout.frame_lasti;
  const int64_t lasti_unit = layout.lasti_unit;
  int count = 0;
  CycleGuard cycle;
  const void* frame = InnermostRecordOver(layout, thread_state);
  while (frame != nullptr && count < max && IsPlausiblePointer(frame) &&
         cycle.Visit(frame)) {
    const void* code = LoadPointer(frame, code_offset);
    if (!HasType(layout, code, code_type)) break;
    const int64_t lasti = LoadField<int32_t>(frame, lasti_offset);
    out[count++] = RawFrame{code, ClampLasti(lasti * lasti_unit),
                            CodeIdent(layout, code), /*entry=*/true};
    frame = LoadPointer(frame, previous_offset);
  }
  return Finish(out, count);
}

// 3.11+: _PyInterpreterFrame records (mostly in the thread's data stack)
// linked by `previous`; the position is a pointer into co_code_adaptive.
// Loop activations start at frames with is_entry set (3.11) or at frames
// whose `previous` is a C-stack shim (3.12+, one shim per activation).
[[gnu::always_inline]] inline int WalkInterpreterFramesOver(const FrameLayout& layout,
                                                            const void* code_type,
                                                            const void* thread_state,
                                                            RawFrame* out, int max) {
  const int32_t previous_offset = layout.frame_previous;
  const int32_t code_offset = layout.frame_code;
  const int32_t instr_offset = layout.frame_instr;
  const int32_t owner_offset = layout.frame_owner;
  const char owner_generator = static_cast<char>(layout.owner_generator);
  // -1 (3.11, no shim frames) never equals a real owner value.
  const int owner_cstack = layout.owner_cstack;
  const int32_t is_entry_offset = layout.frame_is_entry;
  const int32_t adaptive_offset = layout.code_adaptive;
  const int32_t firsttraceable_offset = layout.code_firsttraceable;
  const int64_t unit = layout.code_unit_size;

  const void* frame = InnermostRecordOver(layout, thread_state);
  int count = 0;
  // Whether the frame visited last (the one inner to `frame`) was recorded.
  bool inner_recorded = false;
  CycleGuard cycle;
  while (frame != nullptr && count < max && IsPlausiblePointer(frame) &&
         cycle.Visit(frame)) {
    const char owner = LoadField<char>(frame, owner_offset);
    // Shim frames and (3.13) non-code executables are skipped, as CPython's
    // own traceback does; the chain continues past them. The frame right
    // inner to a shim was entered from C.
    if (owner == owner_cstack) {
      if (inner_recorded) out[count - 1].entry = true;
      inner_recorded = false;
      frame = LoadPointer(frame, previous_offset);
      continue;
    }
    inner_recorded = false;
    const void* code = LoadPointer(frame, code_offset);
    if (HasType(layout, code, code_type)) {
      const auto* instr =
          static_cast<const char*>(LoadPointer(frame, instr_offset));
      const char* bytecode = static_cast<const char*>(code) + adaptive_offset;
      const int64_t lasti = instr - bytecode;
      const int64_t first_traceable =
          LoadField<int32_t>(code, firsttraceable_offset) * unit;
      // Incomplete frames (not past their prologue yet) are hidden by
      // CPython too; generator frames are always complete.
      if (owner == owner_generator || lasti >= first_traceable) {
        const bool entry = is_entry_offset >= 0 &&
                           LoadField<char>(frame, is_entry_offset) != 0;
        out[count++] = RawFrame{code, ClampLasti(lasti),
                                CodeIdent(layout, code), entry};
        inner_recorded = true;
      }
    }
    frame = LoadPointer(frame, previous_offset);
  }
  return Finish(out, count);
}

// The walkers for a layout read at run time.
DEEPCONTEXT_HOT
int WalkFrameObjects(const FrameLayout& layout, const void* code_type,
                     const void* thread_state, RawFrame* out, int max) {
  return WalkFrameObjectsOver(layout, code_type, thread_state, out, max);
}

DEEPCONTEXT_HOT
int WalkInterpreterFrames(const FrameLayout& layout, const void* code_type,
                          const void* thread_state, RawFrame* out, int max) {
  return WalkInterpreterFramesOver(layout, code_type, thread_state, out, max);
}

// The walker of one generated layout: the layout it is handed is kLayout.
template <const FrameLayout* kLayout>
DEEPCONTEXT_HOT int WalkGenerated(const FrameLayout& /*kLayout*/, const void* code_type,
                                  const void* thread_state, RawFrame* out, int max) {
  if constexpr (kLayout->family == FrameFamily::kInterpreterFrame) {
    return WalkInterpreterFramesOver(*kLayout, code_type, thread_state, out, max);
  } else {
    return WalkFrameObjectsOver(*kLayout, code_type, thread_state, out, max);
  }
}

// WalkGenerated<kLayout> when `layout` is kLayout; nullptr otherwise, and
// where this architecture has no such layout (kLayout is nullptr).
// (A specialization, not `if constexpr (kLayout == nullptr)`: GCC's
// -fsanitize=undefined makes that comparison not a constant expression.)
template <const FrameLayout* kLayout>
WalkFunction GeneratedWalkerIf(const FrameLayout& layout) {
  return &layout == kLayout ? &WalkGenerated<kLayout> : nullptr;
}

template <>
[[maybe_unused]] WalkFunction GeneratedWalkerIf<nullptr>(const FrameLayout& /*layout*/) {
  return nullptr;
}

}  // namespace

DEEPCONTEXT_HOT
const void* InnermostFrameRecord(const FrameLayout& layout, const void* thread_state) {
  return InnermostRecordOver(layout, thread_state);
}

WalkFunction SelectWalker(FrameFamily family) {
  switch (family) {
    case FrameFamily::kFrameObject:
      return &WalkFrameObjects;
    case FrameFamily::kInterpreterFrame:
      return &WalkInterpreterFrames;
  }
  return nullptr;
}

WalkFunction WalkerFor(const FrameLayout& layout) {
  for (const WalkFunction walker : {GeneratedWalkerIf<layouts::kCpython3_9>(layout),
                                    GeneratedWalkerIf<layouts::kCpython3_10>(layout),
                                    GeneratedWalkerIf<layouts::kCpython3_11>(layout),
                                    GeneratedWalkerIf<layouts::kCpython3_12>(layout),
                                    GeneratedWalkerIf<layouts::kCpython3_13>(layout)}) {
    if (walker != nullptr) return walker;
  }
  return SelectWalker(layout.family);
}

}  // namespace deepcontext::python
