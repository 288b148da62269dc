#include "tools/analysis/metric_selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::analysis {
namespace {

using format::FrameKind;
using testing::MakeTrainingProfile;
using testing::ProfileBuilder;

// A one-node profile with the given metrics; each gets value 1 unless it is
// listed in zero.
ProfileTree TreeWith(const std::vector<std::string>& metrics,
                     const std::vector<std::string>& zero = {},
                     const std::string& op_cpu_time = "") {
  ProfileBuilder b;
  if (!op_cpu_time.empty()) b.Meta("op_cpu_time", op_cpu_time);
  format::NodeId op = b.Add(0, FrameKind::kOperator, "op");
  for (const std::string& name : metrics) {
    bool is_zero = std::find(zero.begin(), zero.end(), name) != zero.end();
    b.Metric(name);
    if (!is_zero) b.Value(op, name, 1);
  }
  return ProfileTree::FromProfile(b.profile());
}

std::string DefaultName(const ProfileTree& tree) {
  std::optional<MetricIndex> metric = DefaultMetric(tree);
  return metric ? tree.metrics()[*metric].name : "(none)";
}

TEST(MetricSelectionTest, PrefersGpuTimeWhenItHasValues) {
  EXPECT_EQ(DefaultName(TreeWith({"calls", "cpu_time", "gpu_time"})),
            "gpu_time");
  EXPECT_EQ(
      DefaultName(TreeWith({"calls", "cpu_time", "gpu_time"}, {"gpu_time"})),
      "cpu_time");
}

TEST(MetricSelectionTest, FallsBackToCpuTimeThenFirstCostMetric) {
  EXPECT_EQ(DefaultName(TreeWith({"calls", "wall_time", "cpu_time"})),
            "cpu_time");
  EXPECT_EQ(DefaultName(TreeWith({"calls", "wall_time", "bytes"})),
            "wall_time");
  EXPECT_EQ(DefaultName(TreeWith({"calls"})), "calls");
  EXPECT_EQ(DefaultName(TreeWith({})), "(none)");
}

TEST(MetricSelectionTest, SkipsACpuTimeWithoutSamples) {
  // deepcontext run --no-cpu-time: the metric exists but has no samples.
  EXPECT_EQ(DefaultName(TreeWith({"calls", "cpu_time", "wall_time"}, {"cpu_time"})),
            "wall_time");
  EXPECT_EQ(DefaultName(TreeWith({"calls", "cpu_time", "wall_time"},
                                 {"cpu_time", "wall_time"})),
            "cpu_time");
}

TEST(MetricSelectionTest, PrefersExactWallTimeOverSampledCpuTime) {
  const std::vector<std::string> metrics = {"calls", "cpu_time", "wall_time"};
  EXPECT_EQ(DefaultName(TreeWith(metrics, {}, "sampled every 1000 us")),
            "wall_time");
  EXPECT_EQ(DefaultName(TreeWith(metrics, {}, "on")), "cpu_time");
  EXPECT_EQ(DefaultName(TreeWith(metrics, {"wall_time"}, "sampled every 1000 us")),
            "cpu_time");
  EXPECT_EQ(DefaultName(TreeWith({"calls", "cpu_time", "gpu_time", "wall_time"}, {},
                                 "sampled every 1000 us")),
            "gpu_time");
}

TEST(MetricSelectionTest, ResolveByNameAndErrors) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile());
  StatusOr<MetricIndex> calls = ResolveMetric(tree, "calls");
  ASSERT_TRUE(calls.ok());
  EXPECT_EQ(tree.metrics()[*calls].name, "calls");

  StatusOr<MetricIndex> fallback = ResolveMetric(tree, "");
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(tree.metrics()[*fallback].name, "cpu_time");

  StatusOr<MetricIndex> unknown = ResolveMetric(tree, "gpu_time");
  EXPECT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "unknown metric 'gpu_time'; available metrics: calls, cpu_time");

  StatusOr<MetricIndex> none = ResolveMetric(TreeWith({}), "");
  EXPECT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "the profile contains no metrics");
  EXPECT_EQ(AvailableMetrics(TreeWith({})), "(none)");
}

}  // namespace
}  // namespace deepcontext::analysis
