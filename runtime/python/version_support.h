// Which CPython versions the frame reader supports, and how the running
// version is recognised.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "runtime/python/layouts/frame_layout.h"

namespace deepcontext::python {

struct PythonVersion {
  int major = 0;
  int minor = 0;
  int micro = 0;
};

// Oldest and newest supported minor versions of CPython 3.
inline constexpr int kFirstSupportedMinor = 9;
inline constexpr int kLastSupportedMinor = 13;

// Parses the leading "3.12.1" of Py_GetVersion()'s text ("3.9.18 (main, ..."
// or "3.10.0rc2 ..."); the micro part may be missing. Returns false when the
// text does not start with "<major>.<minor>".
bool ParseVersionString(std::string_view text, PythonVersion* out);

// Decodes a PY_VERSION_HEX value such as Py_Version (3.11+).
PythonVersion DecodeHexVersion(uint64_t hex_version);

// "3.12.1".
std::string FormatVersion(const PythonVersion& version);

// The compiled-in layout for `version`, or the reason there is none, for
// the profile's status line (e.g. "CPython 3.14 is not supported by the
// frame reader (supported: 3.9-3.13)"). A value is never nullptr.
StatusOr<const FrameLayout*> FindLayout(const PythonVersion& version);

// For layouts with debug offsets (3.13+): checks the _Py_DebugOffsets that
// the running interpreter keeps at the start of `py_runtime` (&_PyRuntime)
// against the offsets compiled into `layout`. Refuses, with the reason, a
// missing cookie, a free-threaded build and any disagreeing offset (a
// build configured or patched differently from the one the layout was
// generated from): reading frames with wrong offsets would crash the
// program. Ok for layouts without debug offsets.
Status VerifyDebugOffsets(const FrameLayout& layout, const void* py_runtime);

}  // namespace deepcontext::python
