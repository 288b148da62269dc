#include "tools/export/folded_export.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::exporter {
namespace {

using analysis::ProfileTree;
using analysis::testing::ProfileBuilder;
using format::FrameKind;

std::string ReadGolden(const std::string& name) {
  std::ifstream in(std::string(DC_EXPORT_GOLDEN_DIR) + "/" + name);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(FoldedExportTest, TrainingProfileMatchesGolden) {
  ProfileTree tree = ProfileTree::FromProfile(
      analysis::testing::MakeTrainingProfile(), "a.dctx");
  EXPECT_EQ(RenderFolded(tree), ReadGolden("training.folded"));
}

TEST(FoldedExportTest, SeparatorsInNamesCannotSplitAStack) {
  ProfileBuilder b;
  format::NodeId thread = b.Add(0, FrameKind::kThread, "main");
  format::NodeId op = b.Add(thread, FrameKind::kOperator, "a;b\nc");
  b.Value(op, "cpu_time", 7);
  format::NodeId tiny = b.Add(thread, FrameKind::kOperator, "tiny");
  b.Value(tiny, "cpu_time", 0.2);  // rounds to 0: left out
  ProfileTree tree = ProfileTree::FromProfile(b.profile());
  EXPECT_EQ(RenderFolded(tree), "thread main;a:b c 7\n");
}

TEST(FoldedExportTest, NoMetricsNoLines) {
  ProfileBuilder b;
  b.Add(0, FrameKind::kThread, "main");
  EXPECT_EQ(RenderFolded(ProfileTree::FromProfile(b.profile())), "");
}

}  // namespace
}  // namespace deepcontext::exporter
