#include "format/profile_validate.h"

#include <gtest/gtest.h>

#include "tests/unit/format/format_test_util.h"

namespace deepcontext::format {
namespace {

// root(0) -> thread(1) -> python(2) -> operator(3), two metrics.
Profile SmallProfile() {
  Profile p;
  p.strings = {"", "main", "train.py", "aten::mm"};
  p.nodes.push_back({0, FrameKind::kThread, 1, 0, 0});
  p.nodes.push_back({1, FrameKind::kPythonFrame, 1, 2, 10});
  p.nodes.push_back({2, FrameKind::kOperator, 3, 0, 0});
  p.metrics = {{"calls", "count", ""}, {"cpu_time", "ns", ""}};
  p.values = {{3, 0, 1, 1, 1, 1}, {3, 1, 1, 5, 5, 5}, {2, 1, 2, 3, 1, 2}};
  return p;
}

TEST(ProfileValidate, AcceptsValidProfiles) {
  EXPECT_TRUE(ValidateProfile(Profile{}).ok());
  EXPECT_TRUE(ValidateProfile(SmallProfile()).ok());
  EXPECT_TRUE(ValidateProfile(MakeSampleProfile(500)).ok());
}

TEST(ProfileValidate, StringZeroMustBeEmpty) {
  Profile p = SmallProfile();
  p.strings[0] = "x";
  EXPECT_EQ(ValidateProfile(p).message(), "string 0 is not the empty string");
  p.strings.clear();
  EXPECT_EQ(ValidateProfile(p).message(), "string 0 is not the empty string");
}

TEST(ProfileValidate, RootRules) {
  Profile p = SmallProfile();
  p.nodes.clear();
  EXPECT_EQ(ValidateProfile(p).message(), "no root node");
  p = SmallProfile();
  p.nodes[0].kind = FrameKind::kThread;
  EXPECT_EQ(ValidateProfile(p).message(), "node 0 is not the root");
  p = SmallProfile();
  p.nodes[0].parent = 2;
  EXPECT_EQ(ValidateProfile(p).message(), "root node's parent is not itself");
  p = SmallProfile();
  p.nodes[2].kind = FrameKind::kRoot;
  EXPECT_EQ(ValidateProfile(p).message(), "node 2: second root node");
}

TEST(ProfileValidate, ParentMustBeBelowIndex) {
  Profile p = SmallProfile();
  p.nodes[2].parent = 2;
  EXPECT_EQ(ValidateProfile(p).message(),
            "node 2: parent 2 is not below the node's index");
  p.nodes[2].parent = 3;
  EXPECT_EQ(ValidateProfile(p).message(),
            "node 2: parent 3 is not below the node's index");
}

TEST(ProfileValidate, KindMustBeKnown) {
  Profile p = SmallProfile();
  p.nodes[3].kind = static_cast<FrameKind>(kMaxFrameKind + 1);
  EXPECT_EQ(ValidateProfile(p).message(), "node 3: unknown kind 14 (max 13)");
  p.nodes[3].kind = static_cast<FrameKind>(255);
  EXPECT_EQ(ValidateProfile(p).message(), "node 3: unknown kind 255 (max 13)");
}

TEST(ProfileValidate, StringIdsMustBeInRange) {
  Profile p = SmallProfile();
  p.nodes[1].name = 4;
  EXPECT_EQ(ValidateProfile(p).message(),
            "node 1: name string id 4 out of range (4 strings)");
  p = SmallProfile();
  p.nodes[2].file = 0xffffffff;
  EXPECT_EQ(ValidateProfile(p).message(),
            "node 2: file string id 4294967295 out of range (4 strings)");
}

TEST(ProfileValidate, MetricNamesMustBeNonEmptyAndUnique) {
  Profile p = SmallProfile();
  p.metrics[1].name = "";
  EXPECT_EQ(ValidateProfile(p).message(), "metric 1: empty name");
  p.metrics[1].name = "calls";
  EXPECT_EQ(ValidateProfile(p).message(), "metric 1: duplicate name 'calls'");
}

TEST(ProfileValidate, ValueIdsMustBeInRange) {
  Profile p = SmallProfile();
  p.values[1].node = 4;
  EXPECT_EQ(ValidateProfile(p).message(),
            "value 1: node id 4 out of range (4 nodes)");
  p = SmallProfile();
  p.values[2].metric = 2;
  EXPECT_EQ(ValidateProfile(p).message(),
            "value 2: metric id 2 out of range (2 metrics)");
}

TEST(ProfileValidate, EachNodeMetricPairHasOneValue) {
  Profile p = SmallProfile();
  p.values.push_back({3, 1, 4, 4, 1, 1});
  EXPECT_EQ(ValidateProfile(p).message(),
            "duplicate value for node 3, metric 1");
}

}  // namespace
}  // namespace deepcontext::format
