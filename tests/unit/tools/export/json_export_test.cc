#include "tools/export/json_export.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::exporter {
namespace {

using analysis::NodeIndex;
using analysis::ProfileInput;
using analysis::ProfileTree;
using analysis::testing::FindNode;
using analysis::testing::kMs;
using analysis::testing::MakeTrainingProfile;
using analysis::testing::MakeTrainingProfileOf;
using analysis::testing::ProfileBuilder;
using analysis::testing::TrainingNodes;
using format::FrameKind;
using nlohmann::json;

json Export(const ProfileTree& tree) { return json::parse(RenderJson(tree)); }

// The JSON node of the tree node reached by path (display names).
const json& NodeAt(const json& doc, const ProfileTree& tree,
                   const std::vector<std::string>& path) {
  std::optional<NodeIndex> index = FindNode(tree, path);
  EXPECT_TRUE(index.has_value());
  return doc["nodes"].at(index.value_or(0));
}

TEST(JsonExportTest, HeaderSourcesAndMetrics) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile(), "a.dctx");
  json doc = Export(tree);
  EXPECT_EQ(doc["format"], "deepcontext-json");
  EXPECT_EQ(doc["version"], 1);

  ASSERT_EQ(doc["sources"].size(), 1u);
  const json& source = doc["sources"][0];
  EXPECT_EQ(source["path"], "a.dctx");
  EXPECT_EQ(source["metadata"]["pid"], "4242");
  EXPECT_EQ(source["metadata"]["host"], "gpu01");
  EXPECT_EQ(source["metadata"]["command_line"], "python train.py --epochs 1");
  EXPECT_EQ(source["metadata"].size(), 7u);

  ASSERT_EQ(doc["metrics"].size(), 2u);
  EXPECT_EQ(doc["metrics"][0], (json{{"name", "calls"},
                                     {"unit", "count"},
                                     {"description", "number of calls"}}));
  EXPECT_EQ(doc["metrics"][1]["name"], "cpu_time");
  EXPECT_EQ(doc["metrics"][1]["unit"], "ns");
  EXPECT_EQ(doc["metrics"][1]["description"], "thread CPU time");
}

TEST(JsonExportTest, NodesMirrorTheTree) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile(), "a.dctx");
  json doc = Export(tree);
  const json& nodes = doc["nodes"];
  ASSERT_EQ(nodes.size(), tree.size());
  for (NodeIndex i = 0; i < tree.size(); ++i) {
    const json& node = nodes[i];
    const analysis::Frame& frame = tree.frame_of(i);
    EXPECT_EQ(node["id"], i);
    EXPECT_EQ(node["kind"], format::FrameKindName(frame.kind)) << i;
    EXPECT_EQ(node["name"], frame.name) << i;
    EXPECT_EQ(node["file"], frame.file) << i;
    EXPECT_EQ(node["line"], frame.line) << i;
    EXPECT_EQ(node["children"].get<std::vector<NodeIndex>>(),
              std::vector<NodeIndex>(tree.node(i).children.begin(),
                                     tree.node(i).children.end()))
        << i;
    if (i == ProfileTree::kRootNode) continue;
    ASSERT_TRUE(node["parent"].is_number_unsigned()) << i;
    NodeIndex parent = node["parent"];
    EXPECT_EQ(parent, tree.node(i).parent) << i;
    EXPECT_LT(parent, i);
  }
}

TEST(JsonExportTest, RootHasNullParentAndTotals) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile(), "a.dctx");
  json doc = Export(tree);
  const json& root = doc["nodes"][0];
  EXPECT_EQ(root["id"], 0);
  EXPECT_TRUE(root["parent"].is_null());
  EXPECT_EQ(root["kind"], "root");
  EXPECT_EQ(root["name"], "");
  EXPECT_EQ(root["line"], 0);
  EXPECT_EQ(root["children"].size(), 2u);
  EXPECT_TRUE(root["exclusive"].empty());
  EXPECT_DOUBLE_EQ(root["inclusive"]["cpu_time"].get<double>(), 100 * kMs);
  EXPECT_DOUBLE_EQ(root["inclusive"]["calls"].get<double>(), 44);
}

TEST(JsonExportTest, ExclusiveStatsAndInclusiveValues) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile(), "a.dctx");
  json doc = Export(tree);
  const std::vector<std::string> forward = {"thread main", "<module>",
                                            "train_step", "forward"};
  std::vector<std::string> conv2d = forward;
  conv2d.insert(conv2d.end(), {"[forward]", "aten::conv2d"});

  const json conv = NodeAt(doc, tree, conv2d);
  EXPECT_EQ(conv["kind"], "operator");
  EXPECT_EQ(conv["name"], "aten::conv2d");
  const json& cpu = conv["exclusive"]["cpu_time"];
  EXPECT_DOUBLE_EQ(cpu["sum"].get<double>(), 4 * kMs);
  EXPECT_EQ(cpu["count"], 10);
  EXPECT_TRUE(cpu["count"].is_number_integer());
  // ProfileBuilder spreads min and max around the mean of 0.4 ms.
  EXPECT_DOUBLE_EQ(cpu["min"].get<double>(), 0.2 * kMs);
  EXPECT_DOUBLE_EQ(cpu["max"].get<double>(), 0.8 * kMs);
  EXPECT_DOUBLE_EQ(conv["exclusive"]["calls"]["sum"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(conv["inclusive"]["cpu_time"].get<double>(), 54 * kMs);
  EXPECT_DOUBLE_EQ(conv["inclusive"]["calls"].get<double>(), 20);

  const json python = NodeAt(doc, tree, forward);
  EXPECT_EQ(python["kind"], "python");
  EXPECT_EQ(python["file"], "/usr/lib/python3/site-packages/mylib/model.py");
  EXPECT_EQ(python["line"], 10);
  EXPECT_DOUBLE_EQ(python["exclusive"]["cpu_time"]["sum"].get<double>(),
                   3 * kMs);
  // No calls were sampled in the Python frame itself.
  EXPECT_FALSE(python["exclusive"].contains("calls"));
  EXPECT_DOUBLE_EQ(python["inclusive"]["cpu_time"].get<double>(), 92 * kMs);

  const json thread = NodeAt(doc, tree, {"thread main"});
  EXPECT_EQ(thread["kind"], "thread");
  EXPECT_EQ(thread["name"], "main");
  EXPECT_TRUE(thread["exclusive"].empty());
  EXPECT_DOUBLE_EQ(thread["inclusive"]["cpu_time"].get<double>(), 95 * kMs);

  std::vector<std::string> phase = forward;
  phase.push_back("[forward]");
  EXPECT_EQ(NodeAt(doc, tree, phase)["kind"], "phase");
}

TEST(JsonExportTest, ZeroValuesFollowTheListingRules) {
  ProfileBuilder b;
  format::NodeId thread = b.Add(0, FrameKind::kThread, "main");
  format::NodeId sampled = b.Add(thread, FrameKind::kUserScope, "idle");
  b.Add(thread, FrameKind::kOperator, "aten::empty");
  b.Value(sampled, "cpu_time", 0, 3);
  b.Value(thread, "calls", 1);
  ProfileTree tree = ProfileTree::FromProfile(b.profile());
  json doc = Export(tree);

  // Sampled but summing to zero: listed as exclusive, not as inclusive.
  const json idle = NodeAt(doc, tree, {"thread main", "idle"});
  EXPECT_EQ(idle["kind"], format::FrameKindName(FrameKind::kUserScope));
  EXPECT_EQ(idle["exclusive"]["cpu_time"]["count"], 3);
  EXPECT_DOUBLE_EQ(idle["exclusive"]["cpu_time"]["sum"].get<double>(), 0);
  EXPECT_TRUE(idle["inclusive"].empty());

  const json empty = NodeAt(doc, tree, {"thread main", "aten::empty"});
  EXPECT_TRUE(empty["exclusive"].is_object());
  EXPECT_TRUE(empty["exclusive"].empty());
  EXPECT_TRUE(empty["inclusive"].is_object());
  EXPECT_TRUE(empty["inclusive"].empty());
  EXPECT_TRUE(empty["children"].is_array());
  EXPECT_TRUE(empty["children"].empty());

  const json main = NodeAt(doc, tree, {"thread main"});
  EXPECT_EQ(main["exclusive"].size(), 1u);
  EXPECT_DOUBLE_EQ(main["inclusive"]["calls"].get<double>(), 1);
  EXPECT_FALSE(main["inclusive"].contains("cpu_time"));
}

TEST(JsonExportTest, SeveralProfilesAreMergedUnderProcessNodes) {
  format::Profile first = MakeTrainingProfile();
  format::Profile second = MakeTrainingProfileOf("4343", "1");
  ProfileTree tree = ProfileTree::FromProfiles(
      {ProfileInput{&first, "r0.dctx"}, ProfileInput{&second, "r1.dctx"}});
  json doc = Export(tree);

  ASSERT_EQ(doc["sources"].size(), 2u);
  EXPECT_EQ(doc["sources"][0]["path"], "r0.dctx");
  EXPECT_EQ(doc["sources"][1]["path"], "r1.dctx");
  EXPECT_EQ(doc["sources"][1]["metadata"]["pid"], "4343");
  ASSERT_EQ(doc["metrics"].size(), 2u);

  const json& root = doc["nodes"][0];
  EXPECT_DOUBLE_EQ(root["inclusive"]["cpu_time"].get<double>(), 200 * kMs);
  ASSERT_EQ(root["children"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const json& process = doc["nodes"][root["children"][i].get<size_t>()];
    EXPECT_EQ(process["kind"], "process");
    EXPECT_EQ(process["parent"], 0);
    EXPECT_EQ(process["name"], analysis::ProcessLabel(tree.sources()[i], i));
    EXPECT_DOUBLE_EQ(process["inclusive"]["cpu_time"].get<double>(), 100 * kMs);
  }
  EXPECT_NE(doc["nodes"][root["children"][0].get<size_t>()]["name"],
            doc["nodes"][root["children"][1].get<size_t>()]["name"]);
  EXPECT_EQ(doc["nodes"].size(), tree.size());
}

TEST(JsonExportTest, ProfileWithoutMetrics) {
  format::Profile empty;
  json doc = Export(ProfileTree::FromProfile(empty));
  EXPECT_TRUE(doc["metrics"].is_array());
  EXPECT_TRUE(doc["metrics"].empty());
  ASSERT_EQ(doc["sources"].size(), 1u);
  EXPECT_EQ(doc["sources"][0]["path"], "");
  EXPECT_TRUE(doc["sources"][0]["metadata"].is_object());
  ASSERT_EQ(doc["nodes"].size(), 1u);
  EXPECT_TRUE(doc["nodes"][0]["children"].empty());
}

TEST(JsonExportTest, InvalidUtf8IsReplacedNotFatal) {
  ProfileBuilder b;
  format::NodeId op = b.Add(0, FrameKind::kPythonFrame, "f\xff", "x\xc3.py");
  b.Value(op, "cpu_time", 1);
  b.Meta("host", "node\xfe");
  json doc = Export(ProfileTree::FromProfile(b.profile()));
  EXPECT_EQ(doc["nodes"][1]["name"], "f\xef\xbf\xbd");
  EXPECT_EQ(doc["nodes"][1]["file"], "x\xef\xbf\xbd.py");
  EXPECT_EQ(doc["sources"][0]["metadata"]["host"], "node\xef\xbf\xbd");
}

TEST(JsonExportTest, OneNodePerLine) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile(), "a.dctx");
  std::string text = RenderJson(tree);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  // Header, sources, metrics + "nodes":[, one per node, "]}" and the end.
  EXPECT_EQ(lines, tree.size() + 5);
  EXPECT_EQ(text.rfind("{\"format\":\"deepcontext-json\",\"version\":1,", 0),
            0u);
}

}  // namespace
}  // namespace deepcontext::exporter
