#include "tools/analysis/profile_tree.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <string>
#include <vector>

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::analysis {
namespace {

using format::FrameKind;
using testing::FindNode;
using testing::kMs;
using testing::MakeTrainingProfile;
using testing::ProfileBuilder;

TEST(ProfileTreeTest, ExclusiveAndInclusiveValues) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile(), "a.dctx");
  MetricIndex cpu = *tree.FindMetric("cpu_time");

  EXPECT_DOUBLE_EQ(tree.Total(cpu), 100 * kMs);
  auto main = FindNode(tree, {"thread main"});
  auto forward =
      FindNode(tree, {"thread main", "<module>", "train_step", "forward"});
  auto conv2d = FindNode(tree, {"thread main", "<module>", "train_step",
                                "forward", "[forward]", "aten::conv2d"});
  auto autograd = FindNode(tree, {"thread pt_autograd_0"});
  ASSERT_TRUE(main && forward && conv2d && autograd);

  EXPECT_DOUBLE_EQ(tree.Exclusive(*main, cpu), 0);
  EXPECT_DOUBLE_EQ(tree.Inclusive(*main, cpu), 95 * kMs);
  EXPECT_DOUBLE_EQ(tree.Exclusive(*forward, cpu), 3 * kMs);
  EXPECT_DOUBLE_EQ(tree.Inclusive(*forward, cpu), 92 * kMs);
  EXPECT_DOUBLE_EQ(tree.Exclusive(*conv2d, cpu), 4 * kMs);
  EXPECT_DOUBLE_EQ(tree.Inclusive(*conv2d, cpu), 54 * kMs);
  EXPECT_DOUBLE_EQ(tree.Inclusive(*autograd, cpu), 5 * kMs);
  EXPECT_EQ(tree.stats(*conv2d, cpu).count, 10u);
  EXPECT_EQ(tree.node(*conv2d).depth, 6u);

  const Frame& frame = tree.frame_of(*forward);
  EXPECT_EQ(frame.kind, FrameKind::kPythonFrame);
  EXPECT_EQ(frame.name, "forward");
  EXPECT_EQ(frame.line, 10u);
  EXPECT_EQ(frame.file, "/usr/lib/python3/site-packages/mylib/model.py");
}

TEST(ProfileTreeTest, SingleProfileKeepsSourceAndMetadata) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile(), "a.dctx");
  ASSERT_EQ(tree.sources().size(), 1u);
  EXPECT_EQ(tree.sources()[0].path, "a.dctx");
  EXPECT_EQ(tree.sources()[0].Metadata("pid"), "4242");
  EXPECT_EQ(tree.sources()[0].Metadata("missing"), "");
  // No synthetic process node for a single profile.
  EXPECT_TRUE(FindNode(tree, {"thread main"}).has_value());
}

TEST(ProfileTreeTest, RepeatedValuesForOneNodeAreMerged) {
  ProfileBuilder b;
  format::NodeId op = b.Add(0, FrameKind::kOperator, "aten::add");
  b.profile().metrics.push_back({"cpu_time", "ns", ""});
  b.profile().values.push_back({op, 0, 2, 10, 4, 6});
  b.profile().values.push_back({op, 0, 3, 30, 1, 20});
  ProfileTree tree = ProfileTree::FromProfile(b.profile());
  auto node = FindNode(tree, {"aten::add"});
  ASSERT_TRUE(node);
  const MetricStats& stats = tree.stats(*node, 0);
  EXPECT_DOUBLE_EQ(stats.sum, 40);
  EXPECT_EQ(stats.count, 5u);
  EXPECT_DOUBLE_EQ(stats.min, 1);
  EXPECT_DOUBLE_EQ(stats.max, 20);
}

TEST(ProfileTreeTest, IdenticalSiblingsAreMerged) {
  ProfileBuilder b;
  format::NodeId thread = b.Add(0, FrameKind::kThread, "main");
  format::NodeId first = b.Add(thread, FrameKind::kOperator, "aten::mm");
  format::NodeId second = b.Add(thread, FrameKind::kOperator, "aten::mm");
  format::NodeId other = b.Add(thread, FrameKind::kPythonFrame, "aten::mm");
  b.Value(first, "cpu_time", 5);
  b.Value(second, "cpu_time", 7);
  b.Value(other, "cpu_time", 1);
  ProfileTree tree = ProfileTree::FromProfile(b.profile());
  auto main = FindNode(tree, {"thread main"});
  ASSERT_TRUE(main);
  // Same name but a different kind is a different frame.
  ASSERT_EQ(tree.node(*main).children.size(), 2u);
  NodeIndex mm = tree.node(*main).children[0];
  EXPECT_EQ(tree.frame_of(mm).kind, FrameKind::kOperator);
  EXPECT_DOUBLE_EQ(tree.Exclusive(mm, 0), 12);
  EXPECT_DOUBLE_EQ(tree.Total(0), 13);
}

TEST(ProfileTreeTest, MalformedReferencesAreSkipped) {
  ProfileBuilder b;
  format::NodeId good = b.Add(0, FrameKind::kOperator, "good");
  b.Value(good, "cpu_time", 1);
  format::Profile& p = b.profile();
  // A node whose parent does not exist, and two nodes forming a cycle.
  p.nodes.push_back({999, FrameKind::kOperator, 0, 0, 0});
  auto cycle_a = static_cast<format::NodeId>(p.nodes.size());
  p.nodes.push_back({cycle_a + 1, FrameKind::kOperator, 0, 0, 0});
  p.nodes.push_back({cycle_a, FrameKind::kOperator, 0, 0, 0});
  // A node with string ids out of range is kept with empty strings.
  format::NodeId bad_strings = static_cast<format::NodeId>(p.nodes.size());
  p.nodes.push_back({0, FrameKind::kOperator, 5000, 6000, 3});
  p.values.push_back({bad_strings, 0, 1, 2, 2, 2});
  p.values.push_back({cycle_a, 0, 1, 100, 100, 100});  // unreachable node
  p.values.push_back({12345, 0, 1, 100, 100, 100});    // no such node
  p.values.push_back({good, 77, 1, 100, 100, 100});    // no such metric

  ProfileTree tree = ProfileTree::FromProfile(p);
  EXPECT_EQ(tree.size(), 3u);  // root, good, bad_strings
  EXPECT_DOUBLE_EQ(tree.Total(0), 3);
  auto unnamed = FindNode(tree, {"<operator>"});
  ASSERT_TRUE(unnamed);
  EXPECT_EQ(tree.frame_of(*unnamed).file, "");
}

TEST(ProfileTreeTest, FramesAreKnownByContentInFirstSeenOrder) {
  // A string table may hold a string twice, and frames recur across
  // profiles: both give one frame, numbered where its first node comes.
  format::Profile a;
  a.strings = {"", "main", "f", "a.py", "f", "a.py", "g"};
  a.nodes = {
      {0, FrameKind::kRoot, 0, 0, 0},
      {0, FrameKind::kThread, 1, 0, 0},       // 1
      {1, FrameKind::kPythonFrame, 6, 3, 9},  // 2: g a.py:9
      {2, FrameKind::kPythonFrame, 2, 3, 3},  // 3: f a.py:3
      {1, FrameKind::kPythonFrame, 4, 5, 3},  // 4: f a.py:3, other ids
      {4, FrameKind::kPythonFrame, 2, 3, 4},  // 5: f a.py:4
      {5, FrameKind::kOperator, 2, 0, 0},     // 6: operator f
      {6, FrameKind::kRoot, 0, 0, 0},         // 7: the root's frame
  };
  ProfileTree single = ProfileTree::FromProfile(a);
  ASSERT_EQ(single.size(), 8u);
  const std::vector<Frame> expected = {
      {FrameKind::kRoot, "", "", 0},
      {FrameKind::kThread, "main", "", 0},
      {FrameKind::kPythonFrame, "g", "a.py", 9},
      {FrameKind::kPythonFrame, "f", "a.py", 3},
      {FrameKind::kPythonFrame, "f", "a.py", 4},
      {FrameKind::kOperator, "f", "", 0},
  };
  EXPECT_EQ(single.frames(), expected);
  auto first_f = FindNode(single, {"thread main", "g", "f"});
  auto second_f = FindNode(single, {"thread main", "f"});
  ASSERT_TRUE(first_f && second_f);
  EXPECT_NE(*first_f, *second_f);
  EXPECT_EQ(single.node(*first_f).frame, single.node(*second_f).frame);
  auto root_kind = FindNode(single, {"thread main", "f", "f", "f", "<root>"});
  ASSERT_TRUE(root_kind);
  EXPECT_EQ(single.node(*root_kind).frame, 0u);

  // The second profile brings one new frame and shares the others.
  format::Profile b;
  b.strings = {"", "h", "a.py", "main", "f"};
  b.nodes = {
      {0, FrameKind::kRoot, 0, 0, 0},
      {0, FrameKind::kThread, 3, 0, 0},
      {1, FrameKind::kPythonFrame, 1, 2, 1},
      {2, FrameKind::kPythonFrame, 4, 2, 3},
  };
  ProfileTree both = ProfileTree::FromProfiles({{&a, "a"}, {&b, "b"}});
  // Root, two process labels, a's six frames less the root's, then h.
  ASSERT_EQ(both.frames().size(), 3u + 5u + 1u);
  EXPECT_EQ(both.frames().back(),
            (Frame{FrameKind::kPythonFrame, "h", "a.py", 1}));
  auto f_in_a = FindNode(both, {"process (a)", "thread main", "f"});
  auto f_in_b = FindNode(both, {"process (b)", "thread main", "h", "f"});
  ASSERT_TRUE(f_in_a && f_in_b);
  EXPECT_EQ(both.node(*f_in_a).frame, both.node(*f_in_b).frame);
}

TEST(ProfileTreeTest, EmptyProfileHasOnlyARoot) {
  format::Profile empty;
  empty.nodes.clear();
  ProfileTree tree = ProfileTree::FromProfile(empty);
  EXPECT_EQ(tree.size(), 1u);
  EXPECT_TRUE(tree.metrics().empty());
  EXPECT_DOUBLE_EQ(tree.Total(0), 0);
}

TEST(ProfileTreeTest, SeveralProfilesGoUnderProcessNodes) {
  format::Profile rank0 = MakeTrainingProfile();
  // The second profile lists its metrics in another order and adds one.
  ProfileBuilder b;
  b.Meta("pid", "777");
  b.Meta("rank", "1");
  format::NodeId thread = b.Add(0, FrameKind::kThread, "main");
  format::NodeId op = b.Add(thread, FrameKind::kOperator, "aten::conv2d");
  b.Value(op, "gpu_time", 8 * kMs);
  b.Value(op, "cpu_time", 20 * kMs);
  b.Value(op, "calls", 3, 3);

  ProfileTree tree = ProfileTree::FromProfiles(
      {{&rank0, "/tmp/runs/rank0.dctx"}, {&b.profile(), "rank1.dctx"}});
  ASSERT_EQ(tree.metrics().size(), 3u);
  EXPECT_EQ(tree.metrics()[0].name, "calls");
  EXPECT_EQ(tree.metrics()[1].name, "cpu_time");
  EXPECT_EQ(tree.metrics()[1].unit, "ns");
  EXPECT_EQ(tree.metrics()[2].name, "gpu_time");

  const TreeNode& root = tree.node(ProfileTree::kRootNode);
  ASSERT_EQ(root.children.size(), 2u);
  const Frame& p0 = tree.frame_of(root.children[0]);
  const Frame& p1 = tree.frame_of(root.children[1]);
  EXPECT_EQ(p0.kind, FrameKind::kProcess);
  EXPECT_EQ(p0.name, "process 4242 rank 0 (rank0.dctx)");
  EXPECT_EQ(p1.name, "process 777 rank 1 (rank1.dctx)");

  MetricIndex cpu = *tree.FindMetric("cpu_time");
  MetricIndex gpu = *tree.FindMetric("gpu_time");
  EXPECT_DOUBLE_EQ(tree.Total(cpu), 120 * kMs);
  EXPECT_DOUBLE_EQ(tree.Total(gpu), 8 * kMs);
  EXPECT_DOUBLE_EQ(tree.Inclusive(root.children[0], cpu), 100 * kMs);
  EXPECT_DOUBLE_EQ(tree.Inclusive(root.children[1], cpu), 20 * kMs);
  // Equal frames in different processes stay apart.
  auto other_conv = FindNode(tree, {p1.name, "thread main", "aten::conv2d"});
  ASSERT_TRUE(other_conv);
  EXPECT_DOUBLE_EQ(tree.Exclusive(*other_conv, cpu), 20 * kMs);
  EXPECT_EQ(tree.sources().size(), 2u);
  EXPECT_EQ(tree.sources()[1].Metadata("rank"), "1");
}

TEST(ProfileTreeTest, DuplicateProcessLabelsStaySeparate) {
  format::Profile profile = MakeTrainingProfile();
  ProfileTree tree = ProfileTree::FromProfiles(
      {{&profile, "same.dctx"}, {&profile, "same.dctx"}});
  const TreeNode& root = tree.node(ProfileTree::kRootNode);
  ASSERT_EQ(root.children.size(), 2u);
  EXPECT_DOUBLE_EQ(tree.Total(*tree.FindMetric("cpu_time")), 200 * kMs);
}

TEST(ProfileTreeTest, ProcessLabelLeavesOutMissingParts) {
  SourceInfo full{"/a/b/r0.dctx", {{"pid", "12"}, {"rank", "3"}}};
  EXPECT_EQ(ProcessLabel(full, 0), "process 12 rank 3 (r0.dctx)");
  SourceInfo no_rank{"x.dctx", {{"pid", "12"}}};
  EXPECT_EQ(ProcessLabel(no_rank, 0), "process 12 (x.dctx)");
  SourceInfo nothing{"", {}};
  EXPECT_EQ(ProcessLabel(nothing, 4), "process #5");
}

TEST(ProfileTreeTest, OwnedProfilesGiveTheSameTree) {
  std::vector<format::Profile> owned = {MakeTrainingProfile(),
                                        MakeTrainingProfile()};
  const format::Profile a = owned[0];
  const format::Profile b = owned[1];
  ProfileTree expected =
      ProfileTree::FromProfiles({{&a, "a.dctx"}, {&b, "b.dctx"}});
  ProfileTree tree =
      ProfileTree::FromOwnedProfiles(std::move(owned), {"a.dctx", "b.dctx"});
  ASSERT_EQ(tree.size(), expected.size());
  ASSERT_EQ(tree.metrics().size(), expected.metrics().size());
  for (NodeIndex i = 0; i < tree.size(); ++i) {
    EXPECT_EQ(tree.frame_of(i), expected.frame_of(i));
    EXPECT_EQ(tree.node(i).parent, expected.node(i).parent);
    for (MetricIndex m = 0; m < tree.metrics().size(); ++m) {
      const MetricStats got = tree.stats(i, m);
      const MetricStats want = expected.stats(i, m);
      EXPECT_EQ(got.count, want.count);
      EXPECT_DOUBLE_EQ(got.sum, want.sum);
      EXPECT_DOUBLE_EQ(got.inclusive, want.inclusive);
    }
  }
  EXPECT_EQ(tree.sources()[1].path, "b.dctx");
}

// A small file may declare many metrics over many nodes, each with a single
// value: 20k x 20k cells would be 16 GB stored densely. Storage follows the
// values, and inclusive sums are computed only for the metric asked for.
TEST(ProfileTreeTest, ManyMetricsOverManyNodesStaySmall) {
  constexpr int kCount = 20'000;
  ProfileBuilder b;
  const format::NodeId main = b.Add(0, FrameKind::kThread, "main");
  for (int i = 0; i < kCount; ++i) {
    const format::NodeId node =
        b.Add(main, FrameKind::kPythonFrame, "f", "m.py", i + 1);
    b.Value(node, "m" + std::to_string(i), 1);
  }
#if !defined(__SANITIZE_ADDRESS__)
  // The address space this process may still grow by, so that a dense
  // layout fails here with bad_alloc instead of exhausting the machine.
  rlimit old_limit{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &old_limit), 0);
  rlimit limit = old_limit;
  limit.rlim_cur = 2ull << 30;
  if (old_limit.rlim_cur != RLIM_INFINITY &&
      old_limit.rlim_cur < limit.rlim_cur) {
    limit.rlim_cur = old_limit.rlim_cur;
  }
  ASSERT_EQ(setrlimit(RLIMIT_AS, &limit), 0);
#endif
  {
    ProfileTree tree = ProfileTree::FromProfile(b.profile());
    ASSERT_EQ(tree.metrics().size(), static_cast<size_t>(kCount));
    EXPECT_DOUBLE_EQ(tree.Total(kCount - 1), 1);
    EXPECT_DOUBLE_EQ(tree.Inclusive(1, 7), 1);
    EXPECT_TRUE(tree.HasSamples(123));
    // Every metric's inclusive sums, as export asks for them: a column per
    // metric over every node would be 3.2 GB here.
    double total = 0;
    for (MetricIndex m = 0; m < tree.metrics().size(); ++m) {
      total += tree.Total(m);
      EXPECT_DOUBLE_EQ(tree.Inclusive(2 + static_cast<NodeIndex>(m), m), 1);
    }
    EXPECT_DOUBLE_EQ(total, kCount);
    EXPECT_DOUBLE_EQ(tree.Inclusive(2, 1), 0);
  }
#if !defined(__SANITIZE_ADDRESS__)
  ASSERT_EQ(setrlimit(RLIMIT_AS, &old_limit), 0);
#endif
}

TEST(FrameTest, DisplayNames) {
  EXPECT_EQ(DisplayName({FrameKind::kThread, "main", "", 0}), "thread main");
  // Names the runtime writes already say "thread".
  EXPECT_EQ(DisplayName({FrameKind::kThread, "main thread", "", 0}),
            "main thread");
  EXPECT_EQ(DisplayName({FrameKind::kThread, "thread 1624 (python3)", "", 0}),
            "thread 1624 (python3)");
  EXPECT_EQ(DisplayName({FrameKind::kThread, "threadpool", "", 0}),
            "thread threadpool");
  EXPECT_EQ(DisplayName({FrameKind::kPhase, "forward", "", 0}), "[forward]");
  EXPECT_EQ(DisplayName({FrameKind::kPhase, "[backward]", "", 0}),
            "[backward]");
  EXPECT_EQ(DisplayName({FrameKind::kPythonFrame, "step", "t.py", 3}), "step");
  EXPECT_EQ(DisplayName({FrameKind::kGpuKernel, "", "", 0}), "<gpu_kernel>");
  EXPECT_EQ(DisplayName({FrameKind::kRoot, "", "", 0}), "<root>");
  EXPECT_TRUE(IsStructuralKind(FrameKind::kPhase));
  EXPECT_FALSE(IsStructuralKind(FrameKind::kOperator));
}

}  // namespace
}  // namespace deepcontext::analysis
