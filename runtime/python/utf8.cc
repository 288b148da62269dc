#include "runtime/python/utf8.h"

#include <cstring>

namespace deepcontext::python {
namespace {

constexpr uint32_t kReplacementCharacter = 0xFFFD;

template <typename Unit>
void AppendUnits(const void* data, size_t length, std::string* out) {
  const auto* bytes = static_cast<const char*>(data);
  for (size_t i = 0; i < length; ++i) {
    Unit unit;
    std::memcpy(&unit, bytes + i * sizeof(Unit), sizeof(Unit));
    AppendUtf8(unit, out);
  }
}

}  // namespace

void AppendUtf8(uint32_t code_point, std::string* out) {
  if ((code_point >= 0xD800 && code_point <= 0xDFFF) || code_point > 0x10FFFF) {
    code_point = kReplacementCharacter;
  }
  if (code_point < 0x80) {
    out->push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

bool AppendUcsAsUtf8(const void* data, int kind, size_t length,
                     std::string* out) {
  switch (kind) {
    case 1: {
      // Most names are ASCII: copy the run before the first non-ASCII byte
      // in one go.
      const auto* bytes = static_cast<const unsigned char*>(data);
      size_t ascii = 0;
      while (ascii < length && bytes[ascii] < 0x80) ++ascii;
      out->append(reinterpret_cast<const char*>(bytes), ascii);
      AppendUnits<uint8_t>(bytes + ascii, length - ascii, out);
      return true;
    }
    case 2:
      AppendUnits<uint16_t>(data, length, out);
      return true;
    case 4:
      AppendUnits<uint32_t>(data, length, out);
      return true;
    default:
      return false;
  }
}

}  // namespace deepcontext::python
