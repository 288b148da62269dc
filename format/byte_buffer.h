// Little-endian fixed-width integers, IEEE doubles and LEB128 varints: the
// primitive encodings of the .dctx layout (docs/FORMAT.md).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace deepcontext::format {

// Appends encoded values to a caller-owned string. Appending may throw
// std::bad_alloc; callers that must not throw catch it at their boundary.
class ByteWriter {
 public:
  // Appends to *out, which must outlive the writer.
  explicit ByteWriter(std::string* out) : out_(out) {}

  // Appends one byte.
  void PutU8(uint8_t value);
  // Appends value as 2, 4 or 8 little-endian bytes.
  void PutFixed16(uint16_t value);
  void PutFixed32(uint32_t value);
  void PutFixed64(uint64_t value);
  // Appends the IEEE-754 bit pattern of value as 8 little-endian bytes, so
  // NaN payloads and signed zeros survive a round trip.
  void PutDouble(double value);
  // Appends value as an unsigned LEB128 varint (1 to 10 bytes).
  void PutVarint(uint64_t value);
  // Appends a varint byte length followed by the raw bytes.
  void PutString(std::string_view value);
  // Appends raw bytes.
  void PutBytes(std::string_view bytes);

 private:
  std::string* out_;
};

// Reads encoded values from a borrowed byte range. Every Read* returns false
// (and leaves the position unspecified) when the value is incomplete or
// malformed; it never reads past the end of the range.
class ByteReader {
 public:
  // Reads from bytes, which must outlive the reader.
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}

  // The readers a profile's millions of records go through are inline, with
  // the common case (a one-byte varint, a whole double) first.
  bool ReadU8(uint8_t* value) {
    if (remaining() < 1) return false;
    *value = static_cast<uint8_t>(bytes_[pos_++]);
    return true;
  }
  bool ReadFixed16(uint16_t* value);
  bool ReadFixed32(uint32_t* value);
  bool ReadFixed64(uint64_t* value) {
    if (remaining() < 8) return false;
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(value, bytes_.data() + pos_, 8);
      pos_ += 8;
      return true;
    }
    return ReadFixed64Portable(value);
  }
  bool ReadDouble(double* value) {
    static_assert(sizeof(double) == sizeof(uint64_t));
    uint64_t bits = 0;
    if (!ReadFixed64(&bits)) return false;
    std::memcpy(value, &bits, sizeof(bits));
    return true;
  }
  // Fails on varints longer than 10 bytes or whose value exceeds 64 bits.
  bool ReadVarint(uint64_t* value) {
    if (pos_ < bytes_.size()) {
      const auto byte = static_cast<uint8_t>(bytes_[pos_]);
      if (byte < 0x80) {
        ++pos_;
        *value = byte;
        return true;
      }
    }
    return ReadLongVarint(value);
  }
  // Reads a varint that must fit in 32 bits.
  bool ReadVarint32(uint32_t* value) {
    uint64_t wide = 0;
    if (!ReadVarint(&wide) || wide > UINT32_MAX) return false;
    *value = static_cast<uint32_t>(wide);
    return true;
  }
  // Reads a length-prefixed string; fails when the length exceeds the bytes
  // left, so a corrupt length never causes a large allocation.
  bool ReadString(std::string* value);
  // Returns a view of the next n bytes and advances past them.
  bool ReadBytes(size_t n, std::string_view* bytes);

  // Bytes not yet consumed.
  size_t remaining() const { return bytes_.size() - pos_; }
  // Bytes consumed so far.
  size_t position() const { return pos_; }

 private:
  bool ReadFixed64Portable(uint64_t* value);
  bool ReadLongVarint(uint64_t* value);

  std::string_view bytes_;
  size_t pos_ = 0;
};

}  // namespace deepcontext::format
