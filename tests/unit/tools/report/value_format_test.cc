#include "tools/report/value_format.h"

#include <gtest/gtest.h>

namespace deepcontext::report {
namespace {

TEST(ValueFormatTest, TimePicksTheUnit) {
  EXPECT_EQ(FormatValue(8.214e9, "ns"), "8.21 s");
  EXPECT_EQ(FormatValue(125e9, "ns"), "125 s");
  EXPECT_EQ(FormatValue(45.24e6, "ns"), "45.2 ms");
  EXPECT_EQ(FormatValue(512e3, "ns"), "512 us");
  EXPECT_EQ(FormatValue(850, "ns"), "850 ns");
  EXPECT_EQ(FormatValue(1.5, "ns"), "1.50 ns");
  // Rounding up to 1000 of a unit moves to the next unit.
  EXPECT_EQ(FormatValue(999.96e6, "ns"), "1.00 s");
  EXPECT_EQ(FormatValue(2.5, "ms"), "2.50 ms");
  EXPECT_EQ(FormatValue(3, "s"), "3.00 s");
  EXPECT_EQ(FormatValue(7, "us"), "7.00 us");
}

TEST(ValueFormatTest, BytesUseBinaryUnits) {
  EXPECT_EQ(FormatValue(512, "bytes"), "512 B");
  EXPECT_EQ(FormatValue(1536, "bytes"), "1.50 KiB");
  EXPECT_EQ(FormatValue(3.0 * 1024 * 1024, "bytes"), "3.00 MiB");
  EXPECT_EQ(FormatValue(40.0 * 1024 * 1024 * 1024, "bytes"), "40.0 GiB");
}

TEST(ValueFormatTest, CountsAreGroupedIntegers) {
  EXPECT_EQ(FormatValue(1234567, "count"), "1,234,567");
  EXPECT_EQ(FormatValue(999, "count"), "999");
  EXPECT_EQ(FormatValue(1000, "count"), "1,000");
  EXPECT_EQ(FormatValue(2.6, "count"), "3");
  EXPECT_EQ(FormatCount(-4500), "-4,500");
}

TEST(ValueFormatTest, ZeroAndUnknownUnits) {
  EXPECT_EQ(FormatValue(0, "ns"), "0");
  EXPECT_EQ(FormatValue(0, "bytes"), "0");
  EXPECT_EQ(FormatValue(0.25, "flop/s"), "0.25 flop/s");
  EXPECT_EQ(FormatValue(12345, "J"), "1.23e+04 J");
}

TEST(ValueFormatTest, Percent) {
  EXPECT_EQ(FormatPercent(1, 8), "12.5%");
  EXPECT_EQ(FormatPercent(8, 8), "100.0%");
  EXPECT_EQ(FormatPercent(0, 8), "0.0%");
  EXPECT_EQ(FormatPercent(1, 0), "-");
}

}  // namespace
}  // namespace deepcontext::report
