#include "tools/merge/imbalance.h"

#include <gtest/gtest.h>

#include "tests/unit/tools/analysis/test_profiles.h"
#include "tools/analysis/profile_tree.h"
#include "tools/merge/rank_merger.h"

namespace deepcontext::merge {
namespace {

using analysis::ProfileTree;
using analysis::testing::kMs;
using analysis::testing::MakeTrainingProfile;
using analysis::testing::ProfileBuilder;
using format::FrameKind;

// Rank `rank` of a job: every rank spends 2 ms in aten::add at train.py:5;
// the slow rank also spends slow_ms in aten::mm at train.py:9.
format::Profile Rank(int rank, double slow_ms) {
  ProfileBuilder b;
  b.Metric("wall_time");
  b.Meta("rank", std::to_string(rank));
  auto main = b.Add(0, FrameKind::kThread, "main thread");
  auto common = b.Add(main, FrameKind::kPythonFrame, "step", "/p/train.py", 5);
  b.Value(b.Add(common, FrameKind::kOperator, "aten::add"), "wall_time",
          2 * kMs);
  if (slow_ms > 0) {
    auto line = b.Add(main, FrameKind::kPythonFrame, "step", "/p/train.py", 9);
    b.Value(b.Add(line, FrameKind::kOperator, "aten::mm"), "wall_time",
            slow_ms * kMs);
  }
  return b.profile();
}

ProfileTree MergedTree(const std::vector<format::Profile>& ranks) {
  RankMerger merger;
  for (const format::Profile& rank : ranks) {
    EXPECT_TRUE(merger.Add(rank, "").ok());
  }
  return ProfileTree::FromProfile(merger.Finish(), "job.dctx");
}

TEST(Imbalance, NamesTheSlowRankAndItsLine) {
  ProfileTree tree = MergedTree({Rank(0, 0), Rank(1, 0), Rank(2, 40), Rank(3, 0)});
  ASSERT_TRUE(IsMergedProfile(tree));
  std::optional<ImbalanceView> view =
      FindImbalance(tree, *tree.FindMetric("wall_time"), 5);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->ranks, 4u);
  // aten::add is equal on every rank: no imbalance, not listed.
  ASSERT_EQ(view->contexts.size(), 1u);
  const ImbalancedContext& top = view->contexts[0];
  EXPECT_EQ(tree.frame_of(top.node).name, "aten::mm");
  EXPECT_EQ(top.slowest_rank, 2);
  EXPECT_DOUBLE_EQ(top.max, 40 * kMs);
  EXPECT_DOUBLE_EQ(top.median, 0);
  EXPECT_EQ(top.ranks_with_context, 1u);
  ASSERT_TRUE(top.python_line);
  EXPECT_EQ(tree.frame_of(*top.python_line).line, 9u);
}

TEST(Imbalance, OrdersByExcessOverTheMedian) {
  ProfileTree tree = MergedTree({Rank(0, 10), Rank(1, 10), Rank(2, 10), Rank(3, 30)});
  std::optional<ImbalanceView> view =
      FindImbalance(tree, *tree.FindMetric("wall_time"), 1);
  ASSERT_TRUE(view);
  ASSERT_EQ(view->contexts.size(), 1u);
  EXPECT_EQ(view->contexts[0].slowest_rank, 3);
  EXPECT_DOUBLE_EQ(view->contexts[0].Excess(), 20 * kMs);
}

TEST(Imbalance, OnlyForMergedProfiles) {
  ProfileTree single = ProfileTree::FromProfile(MakeTrainingProfile());
  EXPECT_FALSE(IsMergedProfile(single));
  EXPECT_FALSE(FindImbalance(single, 0, 5));
}

}  // namespace
}  // namespace deepcontext::merge
