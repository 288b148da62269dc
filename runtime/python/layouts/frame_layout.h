// Byte offsets of the CPython structs the frame reader touches, for one minor
// version. Instances live in the generated headers beside it,
// cpython_3_*.h (written by generate_layouts.py from each version's own
// headers), so this library never includes a Python.h and one binary serves
// every supported version. It lives here, not in runtime/python, so that the
// layouts include nothing from the folder that includes them.
#pragma once

#include <cstdint>

namespace deepcontext::python {

// How a thread's frames are chained: heap PyFrameObjects linked by f_back
// (3.9, 3.10) or _PyInterpreterFrame records linked by `previous` (3.11+).
enum class FrameFamily : int32_t {
  kFrameObject = 0,
  kInterpreterFrame = 1,
};

// One cross-check against _Py_DebugOffsets (3.13+): the running interpreter
// stores, as a uint64 at `position` bytes into _PyRuntime, the offset that
// our compiled-in layout has as `expected`.
struct DebugOffsetCheck {
  const char* name = "";
  int32_t position = 0;
  int32_t expected = 0;
};

inline constexpr int kMaxDebugOffsetChecks = 16;

// Offsets are in bytes from the start of the struct; -1 marks a field the
// version does not have. Field order is fixed: the generated headers use
// designated initializers in this order.
struct FrameLayout {
  int32_t major = 0;
  int32_t minor = 0;
  // Patch release whose headers produced the offsets (for messages only).
  const char* generated_from = "";
  FrameFamily family = FrameFamily::kFrameObject;

  // PyObject.
  int32_t object_type = -1;  // ob_type

  // PyThreadState: either the frame pointer lives in the thread state
  // (tstate_frame) or behind tstate->cframe (tstate_cframe, then
  // cframe_current_frame).
  int32_t tstate_frame = -1;
  int32_t tstate_cframe = -1;
  int32_t cframe_current_frame = -1;

  // PyFrameObject (3.9/3.10) or _PyInterpreterFrame (3.11+).
  int32_t frame_previous = -1;  // f_back / previous
  int32_t frame_code = -1;      // f_code / f_executable
  int32_t frame_lasti = -1;     // int f_lasti (3.9/3.10)
  int32_t lasti_unit = 1;       // bytes per f_lasti unit (3.9: 1, 3.10: 2)
  int32_t frame_instr = -1;     // prev_instr (3.11/3.12) / instr_ptr (3.13)
  int32_t frame_owner = -1;     // char owner
  int32_t owner_generator = -1;  // FRAME_OWNED_BY_GENERATOR
  int32_t owner_cstack = -1;     // FRAME_OWNED_BY_CSTACK (3.12+)
  // bool is_entry (3.11 only): the frame starts an activation of the
  // bytecode loop. 3.12+ marks that with a shim frame instead.
  int32_t frame_is_entry = -1;
  int32_t code_unit_size = 2;    // sizeof(_Py_CODEUNIT)

  // PyCodeObject.
  int32_t code_filename = -1;
  int32_t code_name = -1;
  int32_t code_qualname = -1;
  int32_t code_firstlineno = -1;
  int32_t code_firsttraceable = -1;  // _co_firsttraceable, in code units
  int32_t code_adaptive = -1;        // co_code_adaptive (bytecode start)

  // PyASCIIObject / PyCompactUnicodeObject. The `state` bitfield is read as
  // one 32-bit word and decoded with these masks (bitfield placement is
  // ABI-specific, so the generator measures it rather than assuming it).
  int32_t unicode_length = -1;
  int32_t unicode_state = -1;
  uint32_t state_kind_mask = 0;
  int32_t state_kind_shift = 0;
  uint32_t state_compact_mask = 0;
  uint32_t state_ascii_mask = 0;
  uint32_t state_ready_mask = 0;  // 0 when the version has no `ready` bit
  int32_t ascii_data = -1;        // sizeof(PyASCIIObject)
  int32_t compact_data = -1;      // sizeof(PyCompactUnicodeObject)

  // _Py_DebugOffsets (first member of _PyRuntime, 3.13+): lets Initialize
  // refuse a build whose layout differs from the headers we compiled from
  // (a free-threaded build, a distributor patch).
  int32_t debug_free_threaded = -1;  // position of uint64 free_threaded
  int32_t debug_check_count = 0;
  DebugOffsetCheck debug_checks[kMaxDebugOffsetChecks] = {};
};

}  // namespace deepcontext::python
