#include "tools/report/text_table.h"

#include <gtest/gtest.h>

namespace deepcontext::report {
namespace {

using Align = TextTable::Align;

TEST(TextTableTest, WidthCountsCodePoints) {
  EXPECT_EQ(DisplayWidth("abc"), 3u);
  EXPECT_EQ(DisplayWidth("├─ x"), 4u);
  EXPECT_EQ(DisplayWidth(""), 0u);
}

TEST(TextTableTest, TruncateKeepsWholeCodePoints) {
  EXPECT_EQ(TruncateToWidth("abcdefghij", 7), "abcd...");
  EXPECT_EQ(TruncateToWidth("abc", 7), "abc");
  EXPECT_EQ(TruncateToWidth("└─ abcdefgh", 6), "└─ ...");
  EXPECT_EQ(TruncateToWidth("abcdef", 2), "..");
}

TEST(TextTableTest, AlignsColumnsAndTrimsTrailingBlanks) {
  TextTable table({{"Value"}, {"Name", Align::kLeft}, {"Where", Align::kLeft}});
  table.AddRow({"1", "├─ a", ""});
  table.AddRow({"12345", "b", "x.py:1"});
  EXPECT_EQ(table.Render(),
            "Value  Name  Where\n"
            "    1  ├─ a\n"
            "12345  b     x.py:1\n");
}

TEST(TextTableTest, FitToWidthTruncatesOneColumn) {
  TextTable table({{"N"}, {"Name", Align::kLeft}});
  table.AddRow({"1", "a_very_long_kernel_name_that_goes_on"});
  table.FitToWidth(1, 20, 4);
  EXPECT_EQ(table.Render(),
            "N  Name\n"
            "1  a_very_long_ke...\n");
  // Never below the minimum.
  table.FitToWidth(1, 5, 8);
  EXPECT_EQ(table.Render(),
            "N  Name\n"
            "1  a_ver...\n");
}

TEST(TextTableTest, BoldHeader) {
  TextTable table({{"A"}});
  table.AddRow({"1"});
  EXPECT_EQ(table.Render(true), "\x1b[1mA\x1b[0m\n1\n");
}

}  // namespace
}  // namespace deepcontext::report
