#include "tools/merge/rank_merger.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "format/profile_validate.h"
#include "tests/unit/tools/analysis/test_profiles.h"
#include "tools/merge/rank_columns.h"

namespace deepcontext::merge {
namespace {

using analysis::testing::kMs;
using analysis::testing::ProfileBuilder;
using format::FrameKind;

// One rank of a small job: its main thread runs `step` (train.py:10) which
// calls aten::mm for mm_ms, plus an autograd thread named with its tid.
format::Profile RankProfile(const std::string& rank, double mm_ms,
                            const std::string& tid = "100") {
  ProfileBuilder b;
  b.Metric("wall_time", "ns", "wall time");
  if (!rank.empty()) b.Meta("rank", rank);
  b.Meta("pid", "4" + rank);
  b.Meta("host", "node" + rank);
  b.Meta("command_line", "python train.py");
  auto main = b.Add(0, FrameKind::kThread, "main thread");
  auto step = b.Add(main, FrameKind::kPythonFrame, "step", "/p/train.py", 10);
  auto mm = b.Add(step, FrameKind::kOperator, "aten::mm");
  b.Value(mm, "wall_time", mm_ms * kMs, 3);
  auto autograd = b.Add(0, FrameKind::kThread,
                        "thread " + tid + " (pt_autograd_0)");
  auto backward = b.Add(autograd, FrameKind::kOperator, "MmBackward0");
  b.Value(backward, "wall_time", 1 * kMs);
  return b.profile();
}

const format::MetricValue* ValueOf(const format::Profile& profile,
                                   format::NodeId node,
                                   const std::string& metric) {
  for (size_t m = 0; m < profile.metrics.size(); ++m) {
    if (profile.metrics[m].name != metric) continue;
    for (const format::MetricValue& value : profile.values) {
      if (value.node == node && value.metric == m) return &value;
    }
  }
  return nullptr;
}

// Follows names from the root through the profile's own nodes.
std::optional<format::NodeId> NodeAt(const format::Profile& profile,
                                     const std::vector<std::string>& path) {
  format::NodeId current = 0;
  for (const std::string& name : path) {
    std::optional<format::NodeId> next;
    for (format::NodeId i = 1; i < profile.nodes.size(); ++i) {
      if (profile.nodes[i].parent == current &&
          profile.strings[profile.nodes[i].name] == name) {
        next = i;
      }
    }
    if (!next) return std::nullopt;
    current = *next;
  }
  return current;
}

format::Profile Merge(const std::vector<format::Profile>& ranks) {
  RankMerger merger;
  for (size_t i = 0; i < ranks.size(); ++i) {
    Status status = merger.Add(ranks[i], "r" + std::to_string(i) + ".dctx");
    EXPECT_TRUE(status.ok()) << status.message();
  }
  return merger.Finish();
}

TEST(RankMerger, IdenticalContextsMergeAndValuesCombine) {
  format::Profile merged = Merge({RankProfile("0", 2), RankProfile("1", 4)});
  EXPECT_TRUE(format::ValidateProfile(merged).ok());
  // root, main thread, step, aten::mm, autograd thread, MmBackward0.
  EXPECT_EQ(merged.nodes.size(), 6u);
  auto mm = NodeAt(merged, {"main thread", "step", "aten::mm"});
  ASSERT_TRUE(mm);
  const format::MetricValue* wall = ValueOf(merged, *mm, "wall_time");
  ASSERT_NE(wall, nullptr);
  EXPECT_EQ(wall->count, 6u);
  EXPECT_DOUBLE_EQ(wall->sum, 6 * kMs);
}

TEST(RankMerger, KeepsTheDistributionAcrossRanks) {
  format::Profile merged = Merge({RankProfile("0", 1), RankProfile("1", 1),
                                  RankProfile("3", 5), RankProfile("2", 2)});
  auto mm = NodeAt(merged, {"main thread", "step", "aten::mm"});
  ASSERT_TRUE(mm);
  const format::MetricValue* ranks = ValueOf(merged, *mm, "wall_time.ranks");
  ASSERT_NE(ranks, nullptr);
  EXPECT_EQ(ranks->count, 4u);
  EXPECT_DOUBLE_EQ(ranks->sum, 9 * kMs);
  EXPECT_DOUBLE_EQ(ranks->min, 1 * kMs);
  EXPECT_DOUBLE_EQ(ranks->max, 5 * kMs);
  // Median of 1, 1, 2, 5 ms: the mean of the middle two.
  EXPECT_DOUBLE_EQ(ValueOf(merged, *mm, "wall_time.rank_median")->sum,
                   1.5 * kMs);
  EXPECT_DOUBLE_EQ(ValueOf(merged, *mm, "wall_time.slowest_rank")->sum, 3);
  EXPECT_EQ(merged.Metadata("merged_ranks"), "4");
  EXPECT_EQ(merged.Metadata("merged_rank_list"), "0,1,2,3");
  EXPECT_EQ(merged.Metadata("rank3_source"), "r2.dctx");
  EXPECT_EQ(merged.Metadata("rank3_host"), "node3");
  EXPECT_EQ(merged.Metadata("command_line"), "python train.py");
  EXPECT_EQ(merged.Metadata("pid"), "");
}

TEST(RankMerger, RanksWithoutAContextCountAsZero) {
  ProfileBuilder extra;
  extra.Metric("wall_time");
  extra.Meta("rank", "2");
  auto main = extra.Add(0, FrameKind::kThread, "main thread");
  auto slow = extra.Add(main, FrameKind::kPythonFrame, "slow", "/p/train.py", 30);
  extra.Value(slow, "wall_time", 7 * kMs);
  format::Profile merged =
      Merge({RankProfile("0", 1), RankProfile("1", 1), extra.profile()});
  auto node = NodeAt(merged, {"main thread", "slow"});
  ASSERT_TRUE(node);
  const format::MetricValue* ranks = ValueOf(merged, *node, "wall_time.ranks");
  EXPECT_EQ(ranks->count, 1u);
  EXPECT_DOUBLE_EQ(ranks->min, 0);
  EXPECT_DOUBLE_EQ(ranks->max, 7 * kMs);
  EXPECT_DOUBLE_EQ(ValueOf(merged, *node, "wall_time.rank_median")->sum, 0);
  EXPECT_DOUBLE_EQ(ValueOf(merged, *node, "wall_time.slowest_rank")->sum, 2);
}

TEST(RankMerger, ThreadsMatchByNameNotThreadId) {
  format::Profile merged =
      Merge({RankProfile("0", 1, "111"), RankProfile("1", 1, "222")});
  auto backward = NodeAt(merged, {"thread * (pt_autograd_0)", "MmBackward0"});
  ASSERT_TRUE(backward);
  EXPECT_EQ(ValueOf(merged, *backward, "wall_time.ranks")->count, 2u);
  EXPECT_EQ(MergedThreadName("thread 4242"), "thread *");
  EXPECT_EQ(MergedThreadName("main thread"), "main thread");
  EXPECT_EQ(MergedThreadName("thread pool"), "thread pool");
}

TEST(RankMerger, ProfilesWithoutRankAreNumberedByPosition) {
  format::Profile merged = Merge({RankProfile("", 1), RankProfile("", 3)});
  EXPECT_EQ(merged.Metadata("merged_rank_list"), "0,1");
  auto mm = NodeAt(merged, {"main thread", "step", "aten::mm"});
  EXPECT_DOUBLE_EQ(ValueOf(merged, *mm, "wall_time.slowest_rank")->sum, 1);
}

TEST(RankMerger, ProcessesOfOneRankAddUp) {
  RankMerger merger;
  ASSERT_TRUE(merger.Add(RankProfile("1", 1), "a.dctx").ok());
  ASSERT_TRUE(merger.Add(RankProfile("0", 2), "b.dctx").ok());
  // A second process of rank 1 (e.g. a DataLoader worker) after rank 0.
  ASSERT_TRUE(merger.Add(RankProfile("1", 4), "c.dctx").ok());
  EXPECT_EQ(merger.rank_count(), 2u);
  EXPECT_EQ(merger.process_count(), 3u);
  format::Profile merged = merger.Finish();
  auto mm = NodeAt(merged, {"main thread", "step", "aten::mm"});
  ASSERT_TRUE(mm);
  const format::MetricValue* ranks = ValueOf(merged, *mm, "wall_time.ranks");
  EXPECT_EQ(ranks->count, 2u);
  EXPECT_DOUBLE_EQ(ranks->max, 5 * kMs);
  EXPECT_DOUBLE_EQ(ranks->min, 2 * kMs);
  EXPECT_DOUBLE_EQ(ValueOf(merged, *mm, "wall_time.slowest_rank")->sum, 1);
  EXPECT_EQ(merged.Metadata("rank1_source"), "a.dctx,c.dctx");
  EXPECT_EQ(merged.Metadata("rank1_pid"), "41,41");
}

TEST(RankMerger, RefusesABadRankAndAMergedProfile) {
  RankMerger merger;
  Status bad = merger.Add(RankProfile("x", 1), "x.dctx");
  EXPECT_EQ(bad.message(), "x.dctx: rank 'x' is not a non-negative integer");
  format::Profile merged = Merge({RankProfile("0", 1)});
  Status again = merger.Add(merged, "job.dctx");
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.message().find("already a merged profile"), std::string::npos);
}

TEST(RankMerger, RefusesToMixProfilesWithAndWithoutRank) {
  RankMerger merger;
  ASSERT_TRUE(merger.Add(RankProfile("0", 1), "job.rank0.dctx").ok());
  Status launcher = merger.Add(RankProfile("", 1), "job.dctx");
  EXPECT_EQ(launcher.message(),
            "job.dctx: has no rank, but job.rank0.dctx has one (leave out "
            "profiles without a rank, such as the launcher's own)");
  EXPECT_EQ(merger.process_count(), 1u);

  RankMerger reverse;
  ASSERT_TRUE(reverse.Add(RankProfile("", 1), "job.dctx").ok());
  EXPECT_FALSE(reverse.Add(RankProfile("3", 1), "job.rank3.dctx").ok());
}

TEST(RankMerger, OutputDoesNotDependOnHashOrder) {
  format::Profile a = Merge({RankProfile("0", 1), RankProfile("1", 2)});
  format::Profile b = Merge({RankProfile("0", 1), RankProfile("1", 2)});
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t i = 1; i < a.values.size(); ++i) {
    const auto& prev = a.values[i - 1];
    const auto& cur = a.values[i];
    EXPECT_TRUE(prev.node < cur.node ||
                (prev.node == cur.node && prev.metric < cur.metric));
  }
}

}  // namespace
}  // namespace deepcontext::merge
