#include "tools/diff/profile_diff.h"

#include <gtest/gtest.h>

#include "tests/unit/tools/analysis/test_profiles.h"
#include "tools/analysis/profile_tree.h"

namespace deepcontext::diff {
namespace {

using analysis::ProfileTree;
using analysis::testing::kMs;
using analysis::testing::ProfileBuilder;
using format::FrameKind;

// A run of the program: step (train.py:10) -> aten::mm for mm_ms; with `extra`, also
// aten::relu at train.py:12; without, aten::gelu there. The autograd thread
// carries the run's thread id.
format::Profile ProgramRun(double mm_ms, bool relu, const std::string& tid) {
  ProfileBuilder b;
  b.Metric("wall_time", "ns", "wall time");
  auto main = b.Add(0, FrameKind::kThread, "main thread");
  auto step = b.Add(main, FrameKind::kPythonFrame, "step", "/p/train.py", 10);
  b.Value(b.Add(step, FrameKind::kOperator, "aten::mm"), "wall_time", mm_ms * kMs);
  auto act = b.Add(main, FrameKind::kPythonFrame, "step", "/p/train.py", 12);
  b.Value(b.Add(act, FrameKind::kOperator, relu ? "aten::relu" : "aten::gelu"),
          "wall_time", 3 * kMs);
  auto autograd = b.Add(0, FrameKind::kThread, "thread " + tid + " (pt_autograd_0)");
  b.Value(b.Add(autograd, FrameKind::kOperator, "MmBackward0"), "wall_time", 2 * kMs);
  return b.profile();
}

const ContextDiff* Find(const ProfileDiff& diff, const ProfileTree& before,
                        const ProfileTree& after, const std::string& name) {
  for (const ContextDiff& context : diff.contexts) {
    const ProfileTree& tree = context.after ? after : before;
    analysis::NodeIndex node = context.after ? *context.after : *context.before;
    if (tree.frame_of(node).name == name) return &context;
  }
  return nullptr;
}

TEST(ProfileDiff, MatchesContextsAndFindsAddedAndRemoved) {
  ProfileTree before = ProfileTree::FromProfile(ProgramRun(10, false, "111"));
  ProfileTree after = ProfileTree::FromProfile(ProgramRun(4, true, "222"));
  ProfileDiff diff = DiffProfiles(before, after);
  size_t wall = *diff.FindMetric("wall_time");

  const ContextDiff* mm = Find(diff, before, after, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->status, ContextStatus::kChanged);
  EXPECT_DOUBLE_EQ(mm->metrics[wall].ExclusiveChange(), -6 * kMs);
  EXPECT_DOUBLE_EQ(*Relative(mm->metrics[wall].before_exclusive,
                             mm->metrics[wall].after_exclusive), -0.6);
  EXPECT_EQ(Find(diff, before, after, "aten::relu")->status, ContextStatus::kAdded);
  EXPECT_EQ(Find(diff, before, after, "aten::gelu")->status, ContextStatus::kRemoved);
  // Thread ids differ between runs; the autograd thread still matches.
  const ContextDiff* backward = Find(diff, before, after, "MmBackward0");
  EXPECT_EQ(backward->status, ContextStatus::kChanged);
  EXPECT_DOUBLE_EQ(backward->metrics[wall].ExclusiveChange(), 0);
  EXPECT_DOUBLE_EQ(diff.before_totals[wall], 15 * kMs);
  EXPECT_DOUBLE_EQ(diff.after_totals[wall], 9 * kMs);
}

TEST(ProfileDiff, RanksByAbsoluteChange) {
  ProfileTree before = ProfileTree::FromProfile(ProgramRun(10, false, "1"));
  ProfileTree after = ProfileTree::FromProfile(ProgramRun(4, true, "1"));
  ProfileDiff diff = DiffProfiles(before, after);
  size_t wall = *diff.FindMetric("wall_time");
  std::vector<size_t> ranked = RankByChange(diff, wall, 0);
  // mm -6 ms, relu +3 ms, gelu -3 ms; unchanged contexts are left out.
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_DOUBLE_EQ(diff.contexts[ranked[0]].metrics[wall].ExclusiveChange(), -6 * kMs);
  EXPECT_EQ(RankByChange(diff, wall, 1).size(), 1u);
}

TEST(ProfileDiff, LeavesOutTheRankCompanionMetrics) {
  format::Profile merged = ProgramRun(1, false, "1");
  merged.metrics.push_back({"wall_time.ranks", "ns", ""});
  ProfileTree tree = ProfileTree::FromProfile(merged);
  ProfileDiff diff = DiffProfiles(tree, tree);
  ASSERT_EQ(diff.metrics.size(), 1u);
  EXPECT_EQ(diff.metrics[0].name, "wall_time");
}

TEST(ProfileDiff, ChoosesTheRankMetric) {
  ProfileTree before = ProfileTree::FromProfile(ProgramRun(10, false, "1"));
  ProfileTree after = ProfileTree::FromProfile(ProgramRun(4, true, "1"));
  ProfileDiff diff = DiffProfiles(before, after);
  auto chosen = ChooseRankMetric(diff, before, after, "");
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  EXPECT_EQ(diff.metrics[chosen.value()].name, "wall_time");
  EXPECT_EQ(ChooseRankMetric(diff, before, after, "wall_time").value(), chosen.value());
  auto unknown = ChooseRankMetric(diff, before, after, "gpu");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "unknown metric 'gpu'; available metrics: wall_time");
  ProfileTree empty = ProfileTree::FromProfile(format::Profile{});
  ProfileDiff none = DiffProfiles(empty, empty);
  EXPECT_EQ(ChooseRankMetric(none, empty, empty, "").status().message(),
            "the profiles contain no metrics");
}

TEST(ProfileDiff, RelativeOfZeroIsNew) {
  EXPECT_FALSE(Relative(0, 5));
  EXPECT_DOUBLE_EQ(*Relative(4, 5), 0.25);
}

}  // namespace
}  // namespace deepcontext::diff
