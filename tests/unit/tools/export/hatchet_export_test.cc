#include "tools/export/hatchet_export.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::exporter {
namespace {

using analysis::ProfileTree;
using analysis::testing::MakeTrainingProfile;
using Json = nlohmann::json;

// Checks one node against what hatchet's literal reader relies on: a
// "frame" dict with a non-empty "name" and a "type", a "metrics" dict with
// the same keys on every node, and "<m> (inc)" equal to the node's "<m>"
// plus its children's "<m> (inc)". Returns the number of nodes.
size_t CheckNode(const Json& node, const std::set<std::string>& keys) {
  EXPECT_TRUE(node.is_object());
  EXPECT_TRUE(node["frame"].is_object());
  EXPECT_TRUE(node["frame"]["name"].is_string());
  EXPECT_FALSE(node["frame"]["name"].get<std::string>().empty());
  EXPECT_TRUE(node["frame"]["type"].is_string());
  for (const auto& [key, value] : node["frame"].items()) {
    EXPECT_TRUE(value.is_string() || value.is_number_integer()) << key;
  }
  std::set<std::string> node_keys;
  for (const auto& [key, value] : node["metrics"].items()) {
    EXPECT_TRUE(value.is_number()) << key;
    node_keys.insert(key);
  }
  EXPECT_EQ(node_keys, keys);
  size_t count = 1;
  std::map<std::string, double> children_inclusive;
  if (node.contains("children")) {
    EXPECT_FALSE(node["children"].empty());
    for (const Json& child : node["children"]) {
      count += CheckNode(child, keys);
      for (const std::string& key : keys) {
        if (key.ends_with(" (inc)")) {
          children_inclusive[key] += child["metrics"][key].get<double>();
        }
      }
    }
  }
  for (const std::string& key : keys) {
    if (!key.ends_with(" (inc)")) continue;
    const std::string exclusive = key.substr(0, key.size() - 6);
    EXPECT_NEAR(node["metrics"][key].get<double>(),
                node["metrics"][exclusive].get<double>() + children_inclusive[key],
                1e-6);
  }
  return count;
}

TEST(HatchetExport, HasTheShapeOfAHatchetLiteral) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile());
  Json literal = Json::parse(RenderHatchet(tree));
  ASSERT_TRUE(literal.is_array());
  ASSERT_EQ(literal.size(), 1u);
  const std::set<std::string> keys = {"calls", "calls (inc)", "cpu_time",
                                      "cpu_time (inc)"};
  EXPECT_EQ(CheckNode(literal[0], keys), tree.size());
  EXPECT_DOUBLE_EQ(literal[0]["metrics"]["cpu_time (inc)"].get<double>(), 100e6);
  // Python frames carry their file and line in the frame.
  const Json& module = literal[0]["children"][0]["children"][0];
  EXPECT_EQ(module["frame"]["name"], "<module>");
  EXPECT_EQ(module["frame"]["type"], "python");
  EXPECT_EQ(module["frame"]["file"], "/home/user/proj/train.py");
  EXPECT_EQ(module["frame"]["line"], 40);
}

}  // namespace
}  // namespace deepcontext::exporter
