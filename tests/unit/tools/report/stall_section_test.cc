#include "tools/report/stall_section.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/unit/scratch_dir.h"
#include "tests/unit/tools/analysis/stall_profile.h"
#include "tests/unit/tools/analysis/test_profiles.h"
#include "tools/report/report.h"
#include "tools/sass/instruction_sass.h"

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

// Instructions labelled with their SASS as `deepcontext report` reads a
// profile whose cubins were kept: the hottest-instructions table shows the
// SASS beside the offset, the stall reasons and the source line.
TEST(StallSection, HottestInstructionsShowTheirSass) {
  namespace fs = std::filesystem;
  ScratchDir scratch;
  const fs::path cubins = fs::path(scratch.path()) / "run.cubins";
  fs::create_directory(cubins);
  fs::copy_file(std::string(DC_SASS_FIXTURES) + "/scale_add.cubin",
                cubins / (std::string(analysis::testing::kSassCubinName) + ".cubin"));
  format::Profile profile = analysis::testing::MakeSassProfile(cubins.string());
  sass::Disassembler disassembler(std::string(DC_SASS_FIXTURES) + "/fake_toolkit/bin/nvdisasm");
  const sass::SassAnnotation annotation = sass::AnnotateInstructions(
      profile, (fs::path(scratch.path()) / "run.dctx").string(), &disassembler);
  ASSERT_EQ(annotation.annotated, 4u);
  const std::string text = Render(ProfileTree::FromProfile(profile));
  const std::string golden = std::string(DC_GOLDEN_DIR) + "/stall_section_sass.txt";
  if (std::getenv("DEEPCONTEXT_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden) << text;
  }
  EXPECT_EQ(text, ReadFile(golden));
  // The kernel table keeps the bare offset; the instruction table has both.
  EXPECT_NE(text.find("pc 0x00f0 (79%)"), std::string::npos);
  EXPECT_NE(text.find("pc 0x00f0  FFMA R11, R11, R0, 1  "), std::string::npos);
}

TEST(StallSection, EmptyWithoutInstructionSamples) {
  ProfileTree tree = ProfileTree::FromProfile(analysis::testing::MakeTrainingProfile());
  ReportOptions options;
  SectionContext context{tree, options};
  EXPECT_EQ(RenderStallReasons(context), "");
}

}  // namespace
}  // namespace deepcontext::report
