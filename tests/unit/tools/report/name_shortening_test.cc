#include "tools/report/name_shortening.h"

#include <gtest/gtest.h>

namespace deepcontext::report {
namespace {

TEST(NameShorteningTest, CollapsesOutermostTemplateArguments) {
  EXPECT_EQ(CollapseTemplateArguments(
                "cudnn::bn_bw_1C11_kernel_new<float, float, 512, true, 1>"),
            "cudnn::bn_bw_1C11_kernel_new<...>");
  EXPECT_EQ(CollapseTemplateArguments(
                "at::native::kernel<4, at::detail::Array<char*, 3> >"),
            "at::native::kernel<...>");
  // Short lists gain nothing.
  EXPECT_EQ(CollapseTemplateArguments("f<int>"), "f<int>");
}

TEST(NameShorteningTest, PythonNamesAndUnbalancedBracketsStay) {
  EXPECT_EQ(CollapseTemplateArguments("<module>"), "<module>");
  EXPECT_EQ(CollapseTemplateArguments("boolean_dispatch.<locals>.fn"),
            "boolean_dispatch.<locals>.fn");
  EXPECT_EQ(CollapseTemplateArguments("operator<<unbalanced"),
            "operator<<unbalanced");
}

TEST(NameShorteningTest, ShortenNameCollapsesBeforeCutting) {
  const std::string guide = "└─ ";  // 3 columns, 7 bytes
  const std::string cell =
      guide + "cudnn::bn_bw_1C11_kernel_new<float, float, 512, true, 1>";
  EXPECT_EQ(ShortenName(cell, 40, guide.size()),
            guide + "cudnn::bn_bw_1C11_kernel_new<...>");
  EXPECT_EQ(ShortenName(cell, 20, guide.size()), guide + "cudnn::...ew<...>");
  // What fits is left whole, templates and all.
  EXPECT_EQ(ShortenName(cell, 200, guide.size()), cell);
}

TEST(NameShorteningTest, LocationsDropLeadingDirectoriesFirst) {
  EXPECT_EQ(ShortenLocation("examples/train_cnn.py:63", 16, 0),
            "train_cnn.py:63");
  EXPECT_EQ(ShortenLocation("torch/nn/modules/module.py:1194", 20, 0),
            "module.py:1194");
  EXPECT_EQ(ShortenLocation("a/very_long_file_name_here.py:12", 16, 0),
            "very_lo....py:12");
  EXPECT_EQ(ShortenLocation("x.py:1", 16, 0), "x.py:1");
}

}  // namespace
}  // namespace deepcontext::report
