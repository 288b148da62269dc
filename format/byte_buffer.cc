#include "format/byte_buffer.h"

#include <cstring>

namespace deepcontext::format {

void ByteWriter::PutU8(uint8_t value) {
  out_->push_back(static_cast<char>(value));
}

void ByteWriter::PutFixed16(uint16_t value) {
  PutU8(static_cast<uint8_t>(value));
  PutU8(static_cast<uint8_t>(value >> 8));
}

void ByteWriter::PutFixed32(uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8) {
    PutU8(static_cast<uint8_t>(value >> shift));
  }
}

void ByteWriter::PutFixed64(uint64_t value) {
  for (int shift = 0; shift < 64; shift += 8) {
    PutU8(static_cast<uint8_t>(value >> shift));
  }
}

void ByteWriter::PutDouble(double value) {
  static_assert(sizeof(double) == sizeof(uint64_t));
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  PutFixed64(bits);
}

void ByteWriter::PutVarint(uint64_t value) {
  while (value >= 0x80) {
    PutU8(static_cast<uint8_t>(value | 0x80));
    value >>= 7;
  }
  PutU8(static_cast<uint8_t>(value));
}

void ByteWriter::PutString(std::string_view value) {
  PutVarint(value.size());
  PutBytes(value);
}

void ByteWriter::PutBytes(std::string_view bytes) { out_->append(bytes); }

bool ByteReader::ReadFixed16(uint16_t* value) {
  uint64_t wide = 0;
  if (remaining() < 2) return false;
  for (int i = 0; i < 2; ++i) {
    wide |= uint64_t{static_cast<uint8_t>(bytes_[pos_++])} << (8 * i);
  }
  *value = static_cast<uint16_t>(wide);
  return true;
}

bool ByteReader::ReadFixed32(uint32_t* value) {
  uint64_t wide = 0;
  if (remaining() < 4) return false;
  for (int i = 0; i < 4; ++i) {
    wide |= uint64_t{static_cast<uint8_t>(bytes_[pos_++])} << (8 * i);
  }
  *value = static_cast<uint32_t>(wide);
  return true;
}

bool ByteReader::ReadFixed64Portable(uint64_t* value) {
  uint64_t wide = 0;
  if (remaining() < 8) return false;
  for (int i = 0; i < 8; ++i) {
    wide |= uint64_t{static_cast<uint8_t>(bytes_[pos_++])} << (8 * i);
  }
  *value = wide;
  return true;
}

bool ByteReader::ReadLongVarint(uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t byte = 0;
    if (!ReadU8(&byte)) return false;
    uint64_t bits = byte & 0x7f;
    // The 10th byte holds bit 63 only; anything more would be silently lost.
    if (shift == 63 && bits > 1) return false;
    result |= bits << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

bool ByteReader::ReadString(std::string* value) {
  uint64_t length = 0;
  std::string_view bytes;
  if (!ReadVarint(&length) || length > remaining()) return false;
  if (!ReadBytes(static_cast<size_t>(length), &bytes)) return false;
  value->assign(bytes);
  return true;
}

bool ByteReader::ReadBytes(size_t n, std::string_view* bytes) {
  if (n > remaining()) return false;
  *bytes = bytes_.substr(pos_, n);
  pos_ += n;
  return true;
}

}  // namespace deepcontext::format
