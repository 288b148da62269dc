#include "tools/analysis/bottom_up.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::analysis {
namespace {

using format::FrameKind;
using testing::kMs;
using testing::MakeTrainingProfile;
using testing::ProfileBuilder;

std::string Name(const ProfileTree& tree, const BottomUpTree& callers,
                 uint32_t node) {
  return DisplayName(tree.frames()[callers.node(node).frame]);
}

// Returns the child of node whose frame displays as name, or 0.
uint32_t Child(const ProfileTree& tree, const BottomUpTree& callers,
               uint32_t node, const std::string& name) {
  for (uint32_t child : callers.node(node).children) {
    if (Name(tree, callers, child) == name) return child;
  }
  return 0;
}

TEST(BottomUpTest, CallersAreWeightedByTheLeafsExclusiveValue) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile());
  MetricIndex cpu = *tree.FindMetric("cpu_time");
  BottomUpTree callers =
      BottomUpTree::Build(tree, cpu, tree.FindMetric("calls"));

  const CallerNode& root = callers.node(BottomUpTree::kRootNode);
  EXPECT_DOUBLE_EQ(root.value, 100 * kMs);
  // Only frames with exclusive value are top-level: 7 distinct frames.
  EXPECT_EQ(root.children.size(), 7u);
  EXPECT_EQ(Name(tree, callers, root.children[0]), "aten::convolution");
  EXPECT_EQ(Name(tree, callers, root.children[1]),
            "aten::convolution_backward");
  EXPECT_EQ(Child(tree, callers, 0, "thread main"), 0u);

  uint32_t backward = root.children[1];
  EXPECT_DOUBLE_EQ(callers.node(backward).value, 34 * kMs);
  EXPECT_DOUBLE_EQ(callers.node(backward).calls, 12);
  uint32_t op = Child(tree, callers, backward, "ConvolutionBackward0");
  ASSERT_NE(op, 0u);
  EXPECT_EQ(callers.node(backward).children.size(), 1u);
  EXPECT_DOUBLE_EQ(callers.node(op).value, 34 * kMs);

  // The operator is reached from the forward's [backward] phase (30 ms) and
  // from the autograd thread (4 ms); larger first.
  const CallerNode& op_node = callers.node(op);
  ASSERT_EQ(op_node.children.size(), 2u);
  EXPECT_EQ(Name(tree, callers, op_node.children[0]), "[backward]");
  EXPECT_DOUBLE_EQ(callers.node(op_node.children[0]).value, 30 * kMs);
  EXPECT_EQ(Name(tree, callers, op_node.children[1]), "thread pt_autograd_0");
  EXPECT_DOUBLE_EQ(callers.node(op_node.children[1]).value, 4 * kMs);
  EXPECT_DOUBLE_EQ(callers.node(op_node.children[1]).calls, 2);
  // The autograd thread is the end of that chain.
  EXPECT_TRUE(callers.node(op_node.children[1]).children.empty());

  // The chain continues through the Python frames up to the thread.
  uint32_t node = op_node.children[0];
  for (const char* name :
       {"forward", "train_step", "<module>", "thread main"}) {
    node = Child(tree, callers, node, name);
    ASSERT_NE(node, 0u) << name;
    EXPECT_DOUBLE_EQ(callers.node(node).value, 30 * kMs);
  }
  EXPECT_TRUE(callers.node(node).children.empty());
}

TEST(BottomUpTest, RecursiveCallersAreListedAlongThePath) {
  ProfileBuilder b;
  format::NodeId thread = b.Add(0, FrameKind::kThread, "main");
  format::NodeId f1 = b.Add(thread, FrameKind::kPythonFrame, "f", "a.py", 1);
  format::NodeId f2 = b.Add(f1, FrameKind::kPythonFrame, "f", "a.py", 1);
  b.Value(f1, "cpu_time", 1);
  b.Value(f2, "cpu_time", 2);
  ProfileTree tree = ProfileTree::FromProfile(b.profile());
  BottomUpTree callers = BottomUpTree::Build(tree, 0, std::nullopt);

  const CallerNode& root = callers.node(BottomUpTree::kRootNode);
  ASSERT_EQ(root.children.size(), 1u);
  uint32_t f = root.children[0];
  EXPECT_DOUBLE_EQ(callers.node(f).value, 3);
  // f is called by f (2, from the inner node) and by the thread (1).
  uint32_t via_f = Child(tree, callers, f, "f");
  uint32_t via_thread = Child(tree, callers, f, "thread main");
  ASSERT_NE(via_f, 0u);
  ASSERT_NE(via_thread, 0u);
  EXPECT_DOUBLE_EQ(callers.node(via_f).value, 2);
  EXPECT_DOUBLE_EQ(callers.node(via_thread).value, 1);
  EXPECT_EQ(callers.node(via_f).children.size(), 1u);
}

TEST(BottomUpTest, LimitsStopExpansionButKeepValues) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile());
  MetricIndex cpu = *tree.FindMetric("cpu_time");
  BottomUpLimits limits;
  limits.min_value = 10 * kMs;
  limits.max_depth = 3;
  BottomUpTree callers = BottomUpTree::Build(tree, cpu, std::nullopt, limits);

  const CallerNode& root = callers.node(BottomUpTree::kRootNode);
  ASSERT_EQ(root.children.size(), 7u);  // the top level is always complete
  // Small frames keep their value but have no callers built.
  uint32_t small = root.children.back();
  EXPECT_EQ(Name(tree, callers, small), "<module>");
  EXPECT_DOUBLE_EQ(callers.node(small).value, 1 * kMs);
  EXPECT_TRUE(callers.node(small).children.empty());
  EXPECT_FALSE(callers.node(small).expanded);

  // Large frames are expanded down to depth 3 and no further.
  uint32_t node = root.children[0];
  EXPECT_EQ(Name(tree, callers, node), "aten::convolution");
  for (uint32_t depth = 1; depth < 3; ++depth) {
    ASSERT_EQ(callers.node(node).children.size(), 1u);
    node = callers.node(node).children[0];
  }
  EXPECT_EQ(callers.node(node).depth, 3u);
  EXPECT_EQ(Name(tree, callers, node), "[forward]");
  EXPECT_TRUE(callers.node(node).children.empty());
  EXPECT_FALSE(callers.node(node).expanded);
  EXPECT_FALSE(callers.truncated());
}

TEST(BottomUpTest, NodeBudgetTruncates) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile());
  MetricIndex cpu = *tree.FindMetric("cpu_time");
  BottomUpTree full = BottomUpTree::Build(tree, cpu, std::nullopt);
  EXPECT_FALSE(full.truncated());
  BottomUpLimits limits;
  limits.max_nodes = 10;
  BottomUpTree capped = BottomUpTree::Build(tree, cpu, std::nullopt, limits);
  EXPECT_TRUE(capped.truncated());
  EXPECT_LT(capped.size(), full.size());
  EXPECT_DOUBLE_EQ(capped.node(BottomUpTree::kRootNode).value, 100 * kMs);
}

TEST(BottomUpTest, DeepChainsStayLinearInSize) {
  // A 3000-deep recursion with value only at the bottom: the bottom-up tree
  // is one chain, built without per-level copies of the whole path.
  ProfileBuilder b;
  format::NodeId node = b.Add(0, FrameKind::kThread, "main");
  for (int i = 0; i < 3000; ++i) {
    std::string name = "f";
    name += std::to_string(i % 7);
    node = b.Add(node, FrameKind::kPythonFrame, name, "r.py", 1);
  }
  b.Value(node, "cpu_time", 5);
  ProfileTree tree = ProfileTree::FromProfile(b.profile());
  BottomUpTree callers = BottomUpTree::Build(tree, 0, std::nullopt);
  EXPECT_EQ(callers.size(), 3002u);  // virtual root + 3000 frames + thread
  EXPECT_DOUBLE_EQ(callers.node(3001).value, 5);
  EXPECT_EQ(Name(tree, callers, 3001), "thread main");
}

TEST(BottomUpTest, DeepRecursionWithCostAtEveryLevelIsBounded) {
  // One function calling itself 100k deep with self time at every level:
  // the callers of level k are the 100k - k paths below it, so building
  // every level moves 5e9 paths. The default step bound stops expanding
  // long before (and says so), keeping the view well under a second.
  constexpr int kDepth = 100'000;
  ProfileBuilder b;
  format::NodeId node = b.Add(0, FrameKind::kThread, "main");
  for (int i = 0; i < kDepth; ++i) {
    node = b.Add(node, FrameKind::kPythonFrame, "recurse", "r.py", 3);
    b.Value(node, "cpu_time", 1);
  }
  ProfileTree tree = ProfileTree::FromProfile(b.profile());
  BottomUpTree callers = BottomUpTree::Build(tree, 0, std::nullopt);
  EXPECT_TRUE(callers.truncated());
  const BottomUpLimits defaults;
  // Level k costs kDepth - k steps, so the levels built are bounded by
  // the step budget, not by the depth.
  EXPECT_LT(callers.size(), 2 * defaults.max_steps / kDepth + 3);
  ASSERT_GT(callers.size(), 2u);
  // The top levels that were built are exact.
  EXPECT_DOUBLE_EQ(callers.node(1).value, kDepth);
  EXPECT_EQ(Name(tree, callers, 1), "recurse");
  const uint32_t caller = Child(tree, callers, 1, "recurse");
  ASSERT_NE(caller, 0u);
  EXPECT_DOUBLE_EQ(callers.node(caller).value, kDepth - 1);
  EXPECT_DOUBLE_EQ(callers.node(Child(tree, callers, 1, "thread main")).value,
                   1);
}

}  // namespace
}  // namespace deepcontext::analysis
