#include "tools/export/speedscope_export.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::exporter {
namespace {

using analysis::ProfileTree;
using analysis::testing::kMs;
using nlohmann::json;

TEST(SpeedscopeExportTest, OneSampledProfilePerMetricDefaultFirst) {
  ProfileTree tree = ProfileTree::FromProfile(
      analysis::testing::MakeTrainingProfile(), "a.dctx");
  json doc = json::parse(RenderSpeedscope(tree));
  EXPECT_EQ(doc["$schema"], "https://www.speedscope.app/file-format-schema.json");
  EXPECT_EQ(doc["name"], "a.dctx");
  EXPECT_EQ(doc["shared"]["frames"].size(), tree.frames().size());
  ASSERT_EQ(doc["profiles"].size(), 2u);
  const json& cpu = doc["profiles"][0];
  EXPECT_EQ(cpu["name"], "cpu_time");
  EXPECT_EQ(cpu["type"], "sampled");
  EXPECT_EQ(cpu["unit"], "nanoseconds");
  EXPECT_DOUBLE_EQ(cpu["endValue"].get<double>(), 100 * kMs);
  double sum = 0;
  for (const json& weight : cpu["weights"]) sum += weight.get<double>();
  EXPECT_DOUBLE_EQ(sum, 100 * kMs);
  ASSERT_EQ(cpu["samples"].size(), cpu["weights"].size());
  EXPECT_EQ(doc["profiles"][1]["name"], "calls");
  EXPECT_EQ(doc["profiles"][1]["unit"], "none");
}

TEST(SpeedscopeExportTest, SamplesAreRootFirstStacksOfFrames) {
  analysis::testing::TrainingNodes nodes;
  ProfileTree tree = ProfileTree::FromProfile(
      analysis::testing::MakeTrainingProfile(&nodes), "a.dctx");
  json doc = json::parse(RenderSpeedscope(tree));
  const json& frames = doc["shared"]["frames"];
  const json& cpu = doc["profiles"][0];
  bool found = false;
  for (size_t i = 0; i < cpu["samples"].size(); ++i) {
    const json& stack = cpu["samples"][i];
    if (frames[stack.back().get<size_t>()]["name"] != "aten::convolution") {
      continue;
    }
    found = true;
    EXPECT_DOUBLE_EQ(cpu["weights"][i].get<double>(), 50 * kMs);
    EXPECT_EQ(frames[stack[0].get<size_t>()]["name"], "thread main");
    EXPECT_EQ(frames[stack[1].get<size_t>()]["file"], "/home/user/proj/train.py");
    EXPECT_EQ(frames[stack[1].get<size_t>()]["line"], 40);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace deepcontext::exporter
