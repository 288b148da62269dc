#include "runtime/python/version_support.h"

#include <cctype>
#include <cstring>

#include "runtime/python/layouts/cpython_3_10.h"
#include "runtime/python/layouts/cpython_3_11.h"
#include "runtime/python/layouts/cpython_3_12.h"
#include "runtime/python/layouts/cpython_3_13.h"
#include "runtime/python/layouts/cpython_3_9.h"

namespace deepcontext::python {
namespace {

// Parses a run of digits at `*pos`; false when there is none.
bool ParseNumber(std::string_view text, size_t* pos, int* value) {
  const size_t start = *pos;
  int result = 0;
  while (*pos < text.size() && *pos - start < 6 &&
         std::isdigit(static_cast<unsigned char>(text[*pos]))) {
    result = result * 10 + (text[*pos] - '0');
    ++*pos;
  }
  if (*pos == start) return false;
  *value = result;
  return true;
}

const FrameLayout* LayoutForMinor(int minor) {
  switch (minor) {
    case 9:
      return layouts::kCpython3_9;
    case 10:
      return layouts::kCpython3_10;
    case 11:
      return layouts::kCpython3_11;
    case 12:
      return layouts::kCpython3_12;
    case 13:
      return layouts::kCpython3_13;
    default:
      return nullptr;
  }
}

}  // namespace

bool ParseVersionString(std::string_view text, PythonVersion* out) {
  PythonVersion version;
  size_t pos = 0;
  if (!ParseNumber(text, &pos, &version.major)) return false;
  if (pos >= text.size() || text[pos] != '.') return false;
  ++pos;
  if (!ParseNumber(text, &pos, &version.minor)) return false;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    if (!ParseNumber(text, &pos, &version.micro)) return false;
  }
  *out = version;
  return true;
}

PythonVersion DecodeHexVersion(uint64_t hex_version) {
  return PythonVersion{static_cast<int>((hex_version >> 24) & 0xFF),
                       static_cast<int>((hex_version >> 16) & 0xFF),
                       static_cast<int>((hex_version >> 8) & 0xFF)};
}

std::string FormatVersion(const PythonVersion& version) {
  return std::to_string(version.major) + "." + std::to_string(version.minor) +
         "." + std::to_string(version.micro);
}

StatusOr<const FrameLayout*> FindLayout(const PythonVersion& version) {
  const std::string name = "CPython " + std::to_string(version.major) + "." +
                           std::to_string(version.minor);
  const std::string supported =
      " (supported: 3." + std::to_string(kFirstSupportedMinor) + "-3." +
      std::to_string(kLastSupportedMinor) + ")";
  if (version.major != 3 || version.minor < kFirstSupportedMinor ||
      version.minor > kLastSupportedMinor) {
    return Status::Error(name + " is not supported by the frame reader" +
                         supported);
  }
  const FrameLayout* layout = LayoutForMinor(version.minor);
  if (layout == nullptr) {
    return Status::Error(name + " is not supported by the frame reader on this "
                                "architecture (no generated layout)");
  }
  return layout;
}

Status VerifyDebugOffsets(const FrameLayout& layout, const void* py_runtime) {
  if (layout.debug_free_threaded < 0) return Status::Ok();
  const auto* bytes = static_cast<const unsigned char*>(py_runtime);
  const std::string name = "CPython 3." + std::to_string(layout.minor);
  if (std::memcmp(bytes, "xdebugpy", 8) != 0) {
    return Status::Error(name + ": _Py_DebugOffsets cookie not found");
  }
  uint64_t value;
  std::memcpy(&value, bytes + layout.debug_free_threaded, sizeof(value));
  if (value != 0) {
    return Status::Error(
        "free-threaded CPython builds are not supported by the frame "
        "reader");
  }
  for (int i = 0; i < layout.debug_check_count; ++i) {
    const DebugOffsetCheck& check = layout.debug_checks[i];
    std::memcpy(&value, bytes + check.position, sizeof(value));
    if (value != static_cast<uint64_t>(check.expected)) {
      return Status::Error(name + " does not match the layout generated from " +
                           layout.generated_from + ": " + check.name + " is " +
                           std::to_string(value) + ", expected " +
                           std::to_string(check.expected));
    }
  }
  return Status::Ok();
}

}  // namespace deepcontext::python
