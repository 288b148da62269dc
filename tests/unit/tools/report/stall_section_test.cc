#include "tools/report/stall_section.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/unit/tools/analysis/stall_profile.h"
#include "tests/unit/tools/analysis/test_profiles.h"
#include "tools/report/report.h"

namespace deepcontext::report {
namespace {

using analysis::ProfileTree;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Render(const ProfileTree& tree) {
  ReportOptions options;
  options.top = 10;
  options.width = 0;
  SectionContext context{tree, options};
  context.metric = *tree.FindMetric("gpu_time");
  context.metric_name = "gpu_time";
  context.unit = "ns";
  context.total = tree.Total(context.metric);
  return RenderStallReasons(context);
}

TEST(StallSection, MatchesTheGoldenFile) {
  ProfileTree tree = ProfileTree::FromProfile(analysis::testing::MakeStallProfile());
  const std::string text = Render(tree);
  const std::string golden = std::string(DC_GOLDEN_DIR) + "/stall_section.txt";
  if (std::getenv("DEEPCONTEXT_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden) << text;
  }
  EXPECT_EQ(text, ReadFile(golden));
}

TEST(StallSection, EmptyWithoutInstructionSamples) {
  ProfileTree tree = ProfileTree::FromProfile(analysis::testing::MakeTrainingProfile());
  ReportOptions options;
  SectionContext context{tree, options};
  EXPECT_EQ(RenderStallReasons(context), "");
}

}  // namespace
}  // namespace deepcontext::report
