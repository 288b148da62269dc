#include "tools/export/hatchet_export.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "tools/merge/rank_columns.h"

namespace deepcontext::exporter {

namespace {

using Json = nlohmann::ordered_json;
using analysis::NodeIndex;
using analysis::ProfileTree;

Json NodeJson(const ProfileTree& tree, NodeIndex node,
              const std::vector<analysis::MetricIndex>& metrics) {
  const analysis::Frame& frame = tree.frame_of(node);
  Json frame_json = {{"name", analysis::DisplayName(frame)},
                     {"type", format::FrameKindName(frame.kind)}};
  if (!frame.file.empty()) {
    frame_json["file"] = frame.file;
    frame_json["line"] = frame.line;
  }
  Json values = Json::object();
  for (analysis::MetricIndex m : metrics) {
    values[tree.metrics()[m].name] = tree.Exclusive(node, m);
  }
  for (analysis::MetricIndex m : metrics) {
    values[tree.metrics()[m].name + " (inc)"] = tree.Inclusive(node, m);
  }
  Json out = {{"frame", std::move(frame_json)}, {"metrics", std::move(values)}};
  return out;
}

}  // namespace

std::string RenderHatchet(const ProfileTree& tree) {
  std::vector<analysis::MetricIndex> metrics;
  for (analysis::MetricIndex m = 0; m < tree.metrics().size(); ++m) {
    if (!merge::IsRankColumn(tree.metrics()[m].name)) metrics.push_back(m);
  }
  // Built bottom-up without recursion: a parent always has a smaller index
  // than its children, so walking indices downwards completes every child
  // before its parent takes it. Deep trees cannot overflow the stack.
  std::vector<Json> built(tree.size());
  for (NodeIndex node = static_cast<NodeIndex>(tree.size()); node-- > 0;) {
    Json json = NodeJson(tree, node, metrics);
    const auto& children = tree.node(node).children;
    if (!children.empty()) {
      Json list = Json::array();
      for (NodeIndex child : children) list.push_back(std::move(built[child]));
      json["children"] = std::move(list);
    }
    built[node] = std::move(json);
  }
  Json roots = Json::array();
  roots.push_back(std::move(built[ProfileTree::kRootNode]));
  return roots.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace deepcontext::exporter
