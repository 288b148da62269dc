#include "tools/export/view_data.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::exporter {
namespace {

using analysis::NodeIndex;
using analysis::ProfileTree;
using nlohmann::json;

TEST(ViewDataTest, ColumnsMirrorTheTree) {
  ProfileTree tree = ProfileTree::FromProfile(
      analysis::testing::MakeTrainingProfile(), "a.dctx");
  json doc = json::parse(RenderViewData(tree));
  EXPECT_EQ(doc["format"], "deepcontext-view");
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["sources"][0]["path"], "a.dctx");
  EXPECT_EQ(doc["metrics"][doc["defaultMetric"].get<int>()]["name"], "cpu_time");
  EXPECT_EQ(doc["kinds"][8], "gpu_kernel");
  const json& strings = doc["strings"];
  const json& frames = doc["frames"];
  ASSERT_EQ(doc["nodes"]["parent"].size(), tree.size());
  for (NodeIndex i = 0; i < tree.size(); ++i) {
    EXPECT_EQ(doc["nodes"]["parent"][i], tree.node(i).parent);
    size_t frame = doc["nodes"]["frame"][i];
    EXPECT_EQ(frame, tree.node(i).frame);
    EXPECT_EQ(strings[frames["name"][frame].get<size_t>()], tree.frame_of(i).name);
    EXPECT_EQ(strings[frames["file"][frame].get<size_t>()], tree.frame_of(i).file);
    EXPECT_EQ(frames["line"][frame], tree.frame_of(i).line);
    EXPECT_EQ(frames["kind"][frame], static_cast<int>(tree.frame_of(i).kind));
  }
  // Values are the sparse exclusive samples, in node order.
  for (size_t m = 0; m < tree.metrics().size(); ++m) {
    const json& values = doc["values"][m];
    size_t k = 0;
    for (NodeIndex i = 0; i < tree.size(); ++i) {
      const analysis::MetricStats& stats = tree.stats(i, m);
      if (stats.count == 0) continue;
      ASSERT_LT(k, values["node"].size());
      EXPECT_EQ(values["node"][k], i);
      EXPECT_DOUBLE_EQ(values["sum"][k].get<double>(), stats.sum);
      EXPECT_EQ(values["count"][k], stats.count);
      EXPECT_DOUBLE_EQ(values["min"][k].get<double>(), stats.min);
      EXPECT_DOUBLE_EQ(values["max"][k].get<double>(), stats.max);
      ++k;
    }
    EXPECT_EQ(k, values["node"].size());
  }
}

TEST(ViewDataTest, ForeignBytesAndNoMetrics) {
  analysis::testing::ProfileBuilder b;
  b.Add(0, format::FrameKind::kThread, std::string("bad\xff name"));
  json doc = json::parse(RenderViewData(ProfileTree::FromProfile(b.profile())));
  EXPECT_EQ(doc["defaultMetric"], -1);
  EXPECT_TRUE(doc["values"].empty());
  EXPECT_EQ(doc["strings"][doc["frames"]["name"][1].get<size_t>()], "bad\xef\xbf\xbd name");
}

}  // namespace
}  // namespace deepcontext::exporter
