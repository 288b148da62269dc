#include "runtime/python/utf8.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace deepcontext::python {
namespace {

std::string Encode(uint32_t code_point) {
  std::string out;
  AppendUtf8(code_point, &out);
  return out;
}

TEST(Utf8Test, EncodesEachLengthClassAtItsBoundaries) {
  EXPECT_EQ(Encode(0x41), "A");
  EXPECT_EQ(Encode(0x7F), "\x7F");
  EXPECT_EQ(Encode(0x80), "\xC2\x80");
  EXPECT_EQ(Encode(0xE9), "\xC3\xA9");
  EXPECT_EQ(Encode(0x7FF), "\xDF\xBF");
  EXPECT_EQ(Encode(0x800), "\xE0\xA0\x80");
  EXPECT_EQ(Encode(0x51FD), "\xE5\x87\xBD");
  EXPECT_EQ(Encode(0xFFFF), "\xEF\xBF\xBF");
  EXPECT_EQ(Encode(0x10000), "\xF0\x90\x80\x80");
  EXPECT_EQ(Encode(0x1F600), "\xF0\x9F\x98\x80");
  EXPECT_EQ(Encode(0x10FFFF), "\xF4\x8F\xBF\xBF");
}

TEST(Utf8Test, ReplacesSurrogatesAndOutOfRangeValues) {
  const std::string replacement = "\xEF\xBF\xBD";
  EXPECT_EQ(Encode(0xD800), replacement);
  EXPECT_EQ(Encode(0xDFFF), replacement);
  EXPECT_EQ(Encode(0x110000), replacement);
  EXPECT_EQ(Encode(0xFFFFFFFF), replacement);
}

TEST(Utf8Test, ConvertsUcs1WithAsciiPrefix) {
  const unsigned char data[] = {'c', 'a', 'f', 0xE9, '!'};
  std::string out = "x";
  ASSERT_TRUE(AppendUcsAsUtf8(data, 1, sizeof(data), &out));
  EXPECT_EQ(out, "xcaf\xC3\xA9!");
}

TEST(Utf8Test, ConvertsUcs2) {
  const std::vector<uint16_t> data = {0x51FD, 0x6570, '_', 0x3A9};
  std::string out;
  ASSERT_TRUE(AppendUcsAsUtf8(data.data(), 2, data.size(), &out));
  EXPECT_EQ(out, "\xE5\x87\xBD\xE6\x95\xB0_\xCE\xA9");
}

TEST(Utf8Test, ConvertsUcs4) {
  const std::vector<uint32_t> data = {'a', 0x1F600, 0x30D5};
  std::string out;
  ASSERT_TRUE(AppendUcsAsUtf8(data.data(), 4, data.size(), &out));
  EXPECT_EQ(out, "a\xF0\x9F\x98\x80\xE3\x83\x95");
}

TEST(Utf8Test, EmptyInputAppendsNothing) {
  std::string out = "keep";
  ASSERT_TRUE(AppendUcsAsUtf8(nullptr, 1, 0, &out));
  EXPECT_EQ(out, "keep");
}

TEST(Utf8Test, RejectsUnknownKind) {
  const uint32_t data[] = {'a'};
  std::string out = "keep";
  EXPECT_FALSE(AppendUcsAsUtf8(data, 3, 1, &out));
  EXPECT_FALSE(AppendUcsAsUtf8(data, 0, 1, &out));
  EXPECT_EQ(out, "keep");
}

}  // namespace
}  // namespace deepcontext::python
