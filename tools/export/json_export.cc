#include "tools/export/json_export.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "format/profile_data.h"
#include "tools/export/json_common.h"

namespace deepcontext::exporter {

namespace {

// Keys keep the order they are written in, so the document reads in the
// order the schema documents.
using Json = nlohmann::ordered_json;


Json NodeJson(const analysis::ProfileTree& tree, analysis::NodeIndex index) {
  const analysis::TreeNode& node = tree.node(index);
  const analysis::Frame& frame = tree.frame_of(index);
  Json exclusive = Json::object();
  Json inclusive = Json::object();
  for (analysis::MetricIndex m = 0; m < tree.metrics().size(); ++m) {
    const analysis::MetricStats stats = tree.stats(index, m);
    const std::string& name = tree.metrics()[m].name;
    if (stats.count > 0) {
      exclusive[name] = {{"sum", stats.sum},
                         {"count", stats.count},
                         {"min", stats.min},
                         {"max", stats.max}};
    }
    if (stats.inclusive != 0) inclusive[name] = stats.inclusive;
  }
  Json parent = index == analysis::ProfileTree::kRootNode ? Json(nullptr)
                                                          : Json(node.parent);
  return {{"id", index},
          {"parent", parent},
          {"kind", format::FrameKindName(frame.kind)},
          {"name", frame.name},
          {"file", frame.file},
          {"line", frame.line},
          {"children", std::vector<analysis::NodeIndex>(node.children.begin(),
                                                        node.children.end())},
          {"exclusive", exclusive},
          {"inclusive", inclusive}};
}

}  // namespace

std::string RenderJson(const analysis::ProfileTree& tree) {
  // Written piece by piece rather than as one Json value so that only one
  // node's object is alive at a time; a tree can hold millions of nodes.
  std::string text = "{\"format\":" + DumpJson(kJsonFormatName) +
                     ",\"version\":" + DumpJson(kJsonFormatVersion) +
                     ",\n\"sources\":" + DumpJson(SourcesJson(tree)) +
                     ",\n\"metrics\":" + DumpJson(MetricsJson(tree)) +
                     ",\n\"nodes\":[";
  for (analysis::NodeIndex i = 0; i < tree.size(); ++i) {
    text += i == 0 ? "\n" : ",\n";
    text += DumpJson(NodeJson(tree, i));
  }
  text += "\n]}\n";
  return text;
}

}  // namespace deepcontext::exporter
