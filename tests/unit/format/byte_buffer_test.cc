#include "format/byte_buffer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

namespace deepcontext::format {
namespace {

TEST(ByteBuffer, FixedWidthIntegersAreLittleEndian) {
  std::string bytes;
  ByteWriter writer(&bytes);
  writer.PutFixed16(0x0102);
  writer.PutFixed32(0x03040506);
  writer.PutFixed64(0x0708090a0b0c0d0eULL);
  EXPECT_EQ(bytes, std::string("\x02\x01\x06\x05\x04\x03"
                               "\x0e\x0d\x0c\x0b\x0a\x09\x08\x07",
                               14));
  ByteReader reader(bytes);
  uint16_t a = 0;
  uint32_t b = 0;
  uint64_t c = 0;
  ASSERT_TRUE(reader.ReadFixed16(&a));
  ASSERT_TRUE(reader.ReadFixed32(&b));
  ASSERT_TRUE(reader.ReadFixed64(&c));
  EXPECT_EQ(a, 0x0102);
  EXPECT_EQ(b, 0x03040506u);
  EXPECT_EQ(c, 0x0708090a0b0c0d0eULL);
  EXPECT_EQ(reader.remaining(), 0u);
  uint8_t extra = 0;
  EXPECT_FALSE(reader.ReadU8(&extra));
}

TEST(ByteBuffer, VarintEncodingMatchesLeb128) {
  struct Case {
    uint64_t value;
    std::string bytes;
  };
  const Case cases[] = {
      {0, std::string("\x00", 1)},
      {1, "\x01"},
      {127, "\x7f"},
      {128, "\x80\x01"},
      {300, "\xac\x02"},
      {16383, "\xff\x7f"},
      {16384, "\x80\x80\x01"},
      {UINT32_MAX, "\xff\xff\xff\xff\x0f"},
      {UINT64_MAX, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"},
  };
  for (const Case& c : cases) {
    std::string bytes;
    ByteWriter(&bytes).PutVarint(c.value);
    EXPECT_EQ(bytes, c.bytes) << c.value;
    ByteReader reader(bytes);
    uint64_t decoded = 0;
    ASSERT_TRUE(reader.ReadVarint(&decoded)) << c.value;
    EXPECT_EQ(decoded, c.value);
    EXPECT_EQ(reader.remaining(), 0u);
  }
}

TEST(ByteBuffer, MalformedVarintsAreRejected) {
  uint64_t value = 0;
  // Ends while the continuation bit is still set.
  EXPECT_FALSE(ByteReader("\x80\x80").ReadVarint(&value));
  EXPECT_FALSE(ByteReader("").ReadVarint(&value));
  // Bits beyond 64 in the tenth byte.
  EXPECT_FALSE(ByteReader("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02")
                   .ReadVarint(&value));
  // Eleven bytes.
  EXPECT_FALSE(ByteReader("\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01")
                   .ReadVarint(&value));
}

TEST(ByteBuffer, Varint32RejectsValuesAbove32Bits) {
  uint32_t value = 0;
  EXPECT_TRUE(ByteReader("\xff\xff\xff\xff\x0f").ReadVarint32(&value));
  EXPECT_EQ(value, UINT32_MAX);
  EXPECT_FALSE(ByteReader("\x80\x80\x80\x80\x10").ReadVarint32(&value));
}

TEST(ByteBuffer, DoublesKeepTheirExactBits) {
  const double values[] = {0.0,
                           -0.0,
                           1.5,
                           -1e300,
                           std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::denorm_min()};
  for (double v : values) {
    std::string bytes;
    ByteWriter(&bytes).PutDouble(v);
    ASSERT_EQ(bytes.size(), 8u);
    double decoded = 0;
    ASSERT_TRUE(ByteReader(bytes).ReadDouble(&decoded));
    EXPECT_EQ(std::memcmp(&v, &decoded, sizeof(v)), 0) << v;
  }
  std::string bytes;
  ByteWriter(&bytes).PutDouble(1.0);
  EXPECT_EQ(bytes, std::string("\0\0\0\0\0\0\xf0\x3f", 8));
}

TEST(ByteBuffer, StringsAreLengthPrefixed) {
  std::string bytes;
  ByteWriter writer(&bytes);
  writer.PutString("héllo");
  writer.PutString(std::string("a\0b", 3));
  writer.PutString("");
  EXPECT_EQ(bytes, std::string("\x06h\xc3\xa9llo\x03"
                               "a\0b\x00",
                               12));
  ByteReader reader(bytes);
  std::string s;
  ASSERT_TRUE(reader.ReadString(&s));
  EXPECT_EQ(s, "héllo");
  ASSERT_TRUE(reader.ReadString(&s));
  EXPECT_EQ(s, std::string("a\0b", 3));
  ASSERT_TRUE(reader.ReadString(&s));
  EXPECT_EQ(s, "");
  EXPECT_FALSE(reader.ReadString(&s));
}

TEST(ByteBuffer, StringLengthBeyondTheDataIsRejected) {
  std::string s;
  EXPECT_FALSE(ByteReader("\x05"
                          "abcd")
                   .ReadString(&s));
  // A length near 2^64 must not be trusted for an allocation.
  EXPECT_FALSE(
      ByteReader("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01x").ReadString(&s));
}

TEST(ByteBuffer, ReadBytesStopsAtTheEnd) {
  ByteReader reader("abcdef");
  std::string_view view;
  ASSERT_TRUE(reader.ReadBytes(4, &view));
  EXPECT_EQ(view, "abcd");
  EXPECT_EQ(reader.position(), 4u);
  EXPECT_FALSE(reader.ReadBytes(3, &view));
  ASSERT_TRUE(reader.ReadBytes(2, &view));
  EXPECT_EQ(view, "ef");
  uint32_t fixed = 0;
  EXPECT_FALSE(reader.ReadFixed32(&fixed));
}

}  // namespace
}  // namespace deepcontext::format
