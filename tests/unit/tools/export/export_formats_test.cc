#include "tools/export/export_formats.h"

#include <gtest/gtest.h>

#include "tests/unit/tools/analysis/test_profiles.h"
#include "tools/export/folded_export.h"
#include "tools/export/json_export.h"

namespace deepcontext::exporter {
namespace {

TEST(ExportFormatsTest, JsonIsOffered) {
  const ExportFormat* json = FindExportFormat("json");
  ASSERT_NE(json, nullptr);
  EXPECT_EQ(json->name, "json");
  EXPECT_FALSE(json->help.empty());
  auto tree = analysis::ProfileTree::FromProfile(
      analysis::testing::MakeTrainingProfile(), "a.dctx");
  EXPECT_EQ(json->render(tree), RenderJson(tree));
}

TEST(ExportFormatsTest, ViewerFormatsAreOffered) {
  auto tree = analysis::ProfileTree::FromProfile(
      analysis::testing::MakeTrainingProfile(), "a.dctx");
  for (const char* name : {"html", "speedscope", "folded"}) {
    const ExportFormat* format = FindExportFormat(name);
    ASSERT_NE(format, nullptr) << name;
    EXPECT_FALSE(format->help.empty()) << name;
    EXPECT_FALSE(format->render(tree).empty()) << name;
  }
  EXPECT_EQ(FindExportFormat("folded")->render(tree), RenderFolded(tree));
}

TEST(ExportFormatsTest, UnknownNamesAreNotFound) {
  EXPECT_EQ(FindExportFormat("xml"), nullptr);
  EXPECT_EQ(FindExportFormat(""), nullptr);
  EXPECT_EQ(FindExportFormat("JSON"), nullptr);
}

TEST(ExportFormatsTest, NamesListEveryFormat) {
  std::string names = ExportFormatNames();
  EXPECT_EQ(names.rfind("json", 0), 0u) << names;
  for (const ExportFormat& format : ExportFormats()) {
    EXPECT_NE(names.find(format.name), std::string::npos) << format.name;
  }
}

}  // namespace
}  // namespace deepcontext::exporter
