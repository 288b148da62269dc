// Which CPython versions the frame reader supports, and how the running
// version is recognised.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/python/frame_layout.h"

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

// The compiled-in layout for `version`, or nullptr with the reason in `why`
// (e.g. "CPython 3.14 is not supported by the frame reader (supported:
// 3.9-3.13)").
const FrameLayout* FindLayout(const PythonVersion& version, std::string* why);

}  // namespace deepcontext::python
