#include "tools/report/imbalance_section.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/unit/tools/analysis/test_profiles.h"
#include "tools/merge/rank_merger.h"
#include "tools/report/report.h"

namespace deepcontext::report {
namespace {

using analysis::ProfileTree;
using analysis::testing::kMs;
using analysis::testing::MakeTrainingProfile;
using analysis::testing::ProfileBuilder;
using format::FrameKind;

// Rank r of a 4-rank job: equal forward work, a collective whose wait is
// longest on the fast ranks, and extra work on rank 2 at train.py:31.
format::Profile Rank(int rank) {
  ProfileBuilder b;
  b.Metric("wall_time", "ns", "wall time");
  b.Meta("rank", std::to_string(rank));
  auto main = b.Add(0, FrameKind::kThread, "main thread");
  auto step = b.Add(main, FrameKind::kPythonFrame, "train_step",
                    "/home/user/proj/train.py", 22);
  b.Value(b.Add(step, FrameKind::kOperator, "aten::linear"), "wall_time",
          (10 + rank) * kMs);
  auto reduce = b.Add(main, FrameKind::kPythonFrame, "train_step",
                      "/home/user/proj/train.py", 35);
  b.Value(b.Add(reduce, FrameKind::kOperator, "gloo:all_reduce"), "wall_time",
          (rank == 2 ? 1 : 40) * kMs);
  if (rank == 2) {
    auto slow = b.Add(main, FrameKind::kPythonFrame, "train_step",
                      "/home/user/proj/train.py", 31);
    b.Value(b.Add(slow, FrameKind::kOperator, "aten::mm"), "wall_time",
            39 * kMs);
  }
  return b.profile();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Render(const ProfileTree& tree, int top = 10) {
  ReportOptions options;
  options.top = top;
  SectionContext context{tree, options};
  context.metric = *tree.FindMetric("wall_time");
  context.metric_name = "wall_time";
  context.unit = "ns";
  context.total = tree.Total(context.metric);
  return RenderImbalance(context);
}

TEST(ImbalanceSection, MatchesTheGoldenFile) {
  merge::RankMerger merger;
  for (int rank : {0, 1, 2, 3}) ASSERT_TRUE(merger.Add(Rank(rank), "").ok());
  ProfileTree tree = ProfileTree::FromProfile(merger.Finish(), "job.dctx");
  const std::string text = Render(tree);
  const std::string golden = std::string(DC_GOLDEN_DIR) + "/imbalance_section.txt";
  if (std::getenv("DEEPCONTEXT_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden) << text;
  }
  EXPECT_EQ(text, ReadFile(golden));
}

TEST(ImbalanceSection, EmptyForAProfileOfOneProcessOrTopZero) {
  ProfileTree single = ProfileTree::FromProfile(MakeTrainingProfile());
  ReportOptions options;
  SectionContext context{single, options};
  context.metric = *single.FindMetric("cpu_time");
  EXPECT_EQ(RenderImbalance(context), "");

  merge::RankMerger merger;
  for (int rank : {0, 1}) ASSERT_TRUE(merger.Add(Rank(rank), "").ok());
  ProfileTree tree = ProfileTree::FromProfile(merger.Finish());
  EXPECT_EQ(Render(tree, 0), "");
  EXPECT_NE(Render(tree, 3).find("Imbalance across 2 ranks"), std::string::npos);
}

}  // namespace
}  // namespace deepcontext::report
