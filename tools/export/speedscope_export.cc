#include "tools/export/speedscope_export.h"

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/analysis/frame.h"
#include "tools/analysis/metric_selection.h"

namespace deepcontext::exporter {

namespace {

using Json = nlohmann::ordered_json;

std::string SpeedscopeUnit(const std::string& unit) {
  if (unit == "ns") return "nanoseconds";
  if (unit == "bytes" || unit == "B") return "bytes";
  return "none";
}

Json FramesJson(const analysis::ProfileTree& tree) {
  Json frames = Json::array();
  for (const analysis::Frame& frame : tree.frames()) {
    Json entry = {{"name", analysis::DisplayName(frame)}};
    if (!frame.file.empty()) entry["file"] = frame.file;
    if (frame.line > 0) entry["line"] = frame.line;
    frames.push_back(std::move(entry));
  }
  return frames;
}

Json ProfileJson(const analysis::ProfileTree& tree,
                 analysis::MetricIndex metric) {
  Json samples = Json::array();
  Json weights = Json::array();
  std::vector<uint32_t> stack;
  double total = 0;
  for (analysis::NodeIndex i = 1; i < tree.size(); ++i) {
    double value = tree.Exclusive(i, metric);
    if (value == 0) continue;
    stack.clear();
    for (analysis::NodeIndex n = i; n != analysis::ProfileTree::kRootNode;
         n = tree.node(n).parent) {
      stack.push_back(tree.node(n).frame);
    }
    samples.push_back(Json(std::vector<uint32_t>(stack.rbegin(), stack.rend())));
    weights.push_back(value);
    total += value;
  }
  const analysis::MetricInfo& info = tree.metrics()[metric];
  return {{"type", "sampled"},
          {"name", info.name},
          {"unit", SpeedscopeUnit(info.unit)},
          {"startValue", 0},
          {"endValue", total},
          {"samples", std::move(samples)},
          {"weights", std::move(weights)}};
}

}  // namespace

std::string RenderSpeedscope(const analysis::ProfileTree& tree) {
  std::vector<analysis::MetricIndex> order;
  std::optional<analysis::MetricIndex> first = analysis::DefaultMetric(tree);
  if (first && tree.Total(*first) != 0) order.push_back(*first);
  for (analysis::MetricIndex m = 0; m < tree.metrics().size(); ++m) {
    if (m != first && tree.Total(m) != 0) order.push_back(m);
  }
  Json profiles = Json::array();
  for (analysis::MetricIndex m : order) profiles.push_back(ProfileJson(tree, m));
  std::string name =
      tree.sources().empty() ? "deepcontext" : tree.sources()[0].path;
  Json doc = {
      {"$schema", "https://www.speedscope.app/file-format-schema.json"},
      {"name", name},
      {"exporter", "deepcontext"},
      {"activeProfileIndex", 0},
      {"shared", {{"frames", FramesJson(tree)}}},
      {"profiles", std::move(profiles)}};
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace deepcontext::exporter
