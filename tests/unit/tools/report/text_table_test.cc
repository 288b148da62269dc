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

TEST(TextTableTest, EllipsizeMiddleKeepsBothEndsAndThePrefix) {
  EXPECT_EQ(EllipsizeMiddle("abcdefghijklmnop", 11), "abcd...mnop");
  EXPECT_EQ(EllipsizeMiddle("abc", 11), "abc");
  // The tree guide stays whole; the name loses its middle.
  EXPECT_EQ(EllipsizeMiddle("│  └─ cudnn::bn_bw_kernel<float>", 20, 12),
            "│  └─ cudnn:...loat>");
  // No room for two characters on each side: cut at the end instead.
  EXPECT_EQ(EllipsizeMiddle("└─ abcdefgh", 8, 6), "└─ ab...");
}

TEST(TextTableTest, FitToWidthShortensOneColumnInTheMiddle) {
  TextTable table({{"N"}, {"Name", Align::kLeft}});
  table.AddRow({"1", "a_very_long_kernel_name_that_goes_on_and_on_and_on"});
  table.FitToWidth(1, 40, 4);
  EXPECT_EQ(table.Render(),
            "N  Name\n"
            "1  a_very_long_kerne..._on_and_on_and_on\n");
  // Never below the floor given.
  table.FitToWidth(1, 5, 8);
  EXPECT_EQ(table.Render(),
            "N  Name\n"
            "1  a_v...on\n");
}

TEST(TextTableTest, TreeCellsKeepSomeOfTheirNameWhateverTheCap) {
  TextTable table({{"N"}, {"Name", Align::kLeft, 0, TextTable::kMinShownText}});
  const std::string guide = "   └─ ";
  table.AddRow({"1", guide + "a_very_long_kernel_name_that_goes_on_and_on_and_on"},
               {0, guide.size()});
  table.AddRow({"2", "short"});
  table.FitToWidth(1, 12, 4);
  // The guide, then kMinShownText columns of the name: that row alone
  // overflows, the column stays at its cap.
  EXPECT_EQ(table.Render(),
            "N  Name\n"
            "1  " + guide + "a_very_long..._on_and_on\n"
            "2  short\n");
}

TEST(TextTableTest, FitToWidthShrinksColumnsInOrder) {
  TextTable table({{"N"}, {"Name", Align::kLeft}, {"Where", Align::kLeft}});
  table.AddRow({"1", std::string(50, 'n'), std::string(40, 'w')});
  table.FitToWidth(80, {{1, 40}, {2, 20}, {1, 30}});
  std::vector<size_t> widths = table.ColumnWidths();
  EXPECT_EQ(widths[1], 40u);  // Name first, to its floor
  EXPECT_EQ(widths[2], 35u);  // then Where takes the rest of the excess
  EXPECT_EQ(1 + 2 + widths[1] + 2 + widths[2], 80u);
}

TEST(TextTableTest, BoldHeader) {
  TextTable table({{"A"}});
  table.AddRow({"1"});
  EXPECT_EQ(table.Render(true), "\x1b[1mA\x1b[0m\n1\n");
}

}  // namespace
}  // namespace deepcontext::report
