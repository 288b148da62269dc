// Raw reads of CPython objects through a FrameLayout: field loads, pointer
// sanity checks, the code-object fingerprint and unicode -> UTF-8 copies.
//
// Nothing here calls the Python API, so it is usable without the GIL on
// objects the caller knows to be alive (the calling thread's own frames).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/python/layouts/frame_layout.h"

namespace deepcontext::python {

// Loads the T stored `offset` bytes into `base`. memcpy keeps this free of
// strict-aliasing assumptions; it compiles to a single load.
template <typename T>
inline T LoadField(const void* base, int32_t offset) {
  T value;
  std::memcpy(&value, static_cast<const char*>(base) + offset, sizeof(T));
  return value;
}

inline const void* LoadPointer(const void* base, int32_t offset) {
  return LoadField<const void*>(base, offset);
}

// Cheap filter for pointers read from interpreter memory: rejects NULL, the
// zero page, misaligned values and addresses above any user-space range
// (57 bits covers 5-level paging on x86-64 and 52-bit VAs on aarch64). It
// cannot prove a pointer valid; it stops a walk that has gone wrong before it
// dereferences obvious garbage.
inline bool IsPlausiblePointer(const void* pointer) {
  constexpr uintptr_t kMinAddress = 4096;
  constexpr uintptr_t kMaxAddress = uintptr_t{1} << 57;
  const auto value = reinterpret_cast<uintptr_t>(pointer);
  return value >= kMinAddress && value < kMaxAddress &&
         (value & (alignof(void*) - 1)) == 0;
}

// True when `object` plausibly points at an object whose ob_type is `type`.
inline bool HasType(const FrameLayout& layout, const void* object,
                    const void* type) {
  return IsPlausiblePointer(object) &&
         LoadPointer(object, layout.object_type) == type;
}

// Fingerprint of a code object from fields that are fixed at creation
// (interned co_name / co_filename pointers and co_firstlineno), so that a code
// object freed and replaced by another one at the same address is noticed.
inline uint32_t CodeIdent(const FrameLayout& layout, const void* code) {
  const auto name = reinterpret_cast<uintptr_t>(
      LoadPointer(code, layout.code_name));
  const auto file = reinterpret_cast<uintptr_t>(
      LoadPointer(code, layout.code_filename));
  const auto line = LoadField<uint32_t>(code, layout.code_firstlineno);
  // Shifts and xors only: read for every frame of every capture, and only
  // compared for equality (python_frame_cache.h mixes it into its hash).
  // Objects are 16-byte aligned, so the pointers' low 4 bits carry nothing;
  // the three fields land on different bits before the halves are folded.
  const uint64_t mixed = (static_cast<uint64_t>(name) >> 4) ^
                         (static_cast<uint64_t>(file) << 17) ^
                         (static_cast<uint64_t>(line) << 38);
  return static_cast<uint32_t>(mixed ^ (mixed >> 32));
}

// Longest string (in code points) copied out of a unicode object; anything
// longer in a name or filename means we are reading the wrong memory.
inline constexpr int64_t kMaxUnicodeLength = int64_t{1} << 20;

// Appends the contents of the str object `unicode` to `out` as UTF-8.
// Handles compact strings (ASCII, UCS1, UCS2, UCS4), which is how the
// compiler and unmarshal create names and filenames. Returns false, leaving
// `out` unchanged, for anything else: not an exact str (`unicode_type` is
// &PyUnicode_Type), a legacy (non-compact or not ready) string, or values that
// do not look like a string.
bool AppendUnicodeUtf8(const FrameLayout& layout, const void* unicode_type,
                       const void* unicode, std::string* out);

}  // namespace deepcontext::python
