#include "tools/export/timeline_export.h"

#include <gtest/gtest.h>

#include "tests/unit/tools/analysis/test_profiles.h"
#include "tools/export/export_formats.h"

namespace deepcontext::exporter {
namespace {

using analysis::ProfileTree;
using analysis::testing::MakeTrainingProfile;

TEST(TimelineExport, ExplainsWhyAProfileOfAggregatesHasNoTimeline) {
  const ExportFormat* perfetto = FindExportFormat("perfetto");
  ASSERT_NE(perfetto, nullptr);
  ASSERT_NE(perfetto->unavailable, nullptr);
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile());
  std::string why = perfetto->unavailable(tree);
  EXPECT_NE(why.find("no time axis"), std::string::npos) << why;
  EXPECT_EQ(why.find("trace windows"), std::string::npos) << why;

  format::Profile windows = MakeTrainingProfile();
  windows.metadata.emplace_back("trace_windows", "9.8% of the run");
  std::string windowed = WhyNoTimeline(ProfileTree::FromProfile(windows));
  EXPECT_NE(windowed.find("trace windows are aggregated"), std::string::npos);
}

}  // namespace
}  // namespace deepcontext::exporter
