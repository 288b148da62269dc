#include "tools/diff/diff_render.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::diff {
namespace {

using analysis::ProfileTree;
using analysis::testing::kMs;
using analysis::testing::MakeTrainingProfile;
using analysis::testing::ProfileBuilder;
using format::FrameKind;

// The training profile, after a change: convolution twice as fast, a new
// aten::relu under forward, and the autograd thread's work gone.
format::Profile After() {
  analysis::testing::TrainingNodes n;
  ProfileBuilder b;
  b.profile() = MakeTrainingProfile(&n);
  const format::MetricId cpu = b.Metric("cpu_time");
  for (format::MetricValue& value : b.profile().values) {
    if (value.node == n.convolution && value.metric == cpu) value.sum /= 2;
  }
  std::erase_if(b.profile().values, [&n](const format::MetricValue& v) {
    return v.node >= n.autograd_thread;
  });
  b.Value(b.Add(n.phase_forward, FrameKind::kOperator, "aten::relu"),
          "cpu_time", 7 * kMs);
  return b.profile();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(DiffRender, TextMatchesTheGoldenFile) {
  ProfileTree before = ProfileTree::FromProfile(MakeTrainingProfile());
  ProfileTree after = ProfileTree::FromProfile(After());
  ProfileDiff diff = DiffProfiles(before, after);
  DiffOptions options{"before.dctx", "after.dctx", *diff.FindMetric("cpu_time"), 10, 0};
  const std::string text = RenderDiffText(before, after, diff, options);
  const std::string golden = std::string(DC_GOLDEN_DIR) + "/diff.txt";
  if (std::getenv("DEEPCONTEXT_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden) << text;
  }
  EXPECT_EQ(text, ReadFile(golden));
}

TEST(DiffRender, JsonHoldsEveryChangedContextRanked) {
  ProfileTree before = ProfileTree::FromProfile(MakeTrainingProfile());
  ProfileTree after = ProfileTree::FromProfile(After());
  ProfileDiff diff = DiffProfiles(before, after);
  DiffOptions options{"before.dctx", "after.dctx", *diff.FindMetric("cpu_time"), 1, 0};
  nlohmann::json json = nlohmann::json::parse(RenderDiffJson(before, after, diff, options));
  EXPECT_EQ(json["schema"], "deepcontext-diff");
  EXPECT_EQ(json["ranked_by"], "cpu_time");
  ASSERT_GE(json["contexts"].size(), 2u);  // top does not limit JSON
  const auto& first = json["contexts"][0];
  EXPECT_EQ(first["path"].back()["name"], "aten::convolution");
  EXPECT_EQ(first["status"], "changed");
  EXPECT_DOUBLE_EQ(first["metrics"]["cpu_time"]["exclusive"]["change"].get<double>(),
                   -25 * kMs);
  EXPECT_DOUBLE_EQ(first["metrics"]["cpu_time"]["exclusive"]["relative"].get<double>(),
                   -0.5);
  bool relu = false;
  for (const auto& context : json["contexts"]) {
    if (context["path"].back()["name"] == "aten::relu") {
      relu = true;
      EXPECT_EQ(context["status"], "added");
      EXPECT_TRUE(context["metrics"]["cpu_time"]["exclusive"]["relative"].is_null());
      EXPECT_DOUBLE_EQ(context["metrics"]["cpu_time"]["exclusive"]["after"].get<double>(),
                       7 * kMs);
    }
  }
  EXPECT_TRUE(relu);
}

}  // namespace
}  // namespace deepcontext::diff
