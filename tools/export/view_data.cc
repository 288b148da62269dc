#include "tools/export/view_data.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/profile_data.h"
#include "tools/analysis/metric_selection.h"

namespace deepcontext::exporter {

namespace {

using Json = nlohmann::ordered_json;

std::string Dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Numbers are written by hand: a million-node tree has several million of
// them, and building Json arrays of that size would triple the memory.
void AppendNumber(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += '0';  // JSON has no NaN or infinity
    return;
  }
  char buffer[32];
  // Most values are whole numbers (nanoseconds, bytes, counts), which the
  // integer conversion writes several times faster.
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (value == std::trunc(value) && std::fabs(value) < kExactIntegers) {
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer),
                                   static_cast<int64_t>(value));
    out.append(buffer, ec == std::errc() ? end : buffer);
    return;
  }
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, ec == std::errc() ? end : buffer);
}

void AppendNumber(std::string& out, uint64_t value) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, ec == std::errc() ? end : buffer);
}

template <typename Values, typename Get>
void AppendColumn(std::string& out, std::string_view key, const Values& values,
                  Get get) {
  out += '"';
  out += key;
  out += "\":[";
  bool first = true;
  for (const auto& value : values) {
    if (!first) out += ',';
    first = false;
    AppendNumber(out, get(value));
  }
  out += ']';
}

Json SourcesJson(const analysis::ProfileTree& tree) {
  Json sources = Json::array();
  for (const analysis::SourceInfo& source : tree.sources()) {
    Json metadata = Json::object();
    for (const auto& [key, value] : source.metadata) metadata[key] = value;
    sources.push_back({{"path", source.path}, {"metadata", metadata}});
  }
  return sources;
}

Json MetricsJson(const analysis::ProfileTree& tree) {
  Json metrics = Json::array();
  for (const analysis::MetricInfo& metric : tree.metrics()) {
    metrics.push_back({{"name", metric.name},
                       {"unit", metric.unit},
                       {"description", metric.description}});
  }
  return metrics;
}

Json KindsJson() {
  Json kinds = Json::array();
  for (uint8_t kind = 0; kind <= format::kMaxFrameKind; ++kind) {
    kinds.push_back(format::FrameKindName(static_cast<format::FrameKind>(kind)));
  }
  return kinds;
}

// Interns frame names and files so each distinct string is written once.
class StringTable {
 public:
  uint64_t Intern(const std::string& text) {
    auto [it, inserted] = ids_.try_emplace(text, strings_.size());
    if (inserted) strings_.push_back(&it->first);
    return it->second;
  }
  void AppendTo(std::string& out) const {
    out += '[';
    for (size_t i = 0; i < strings_.size(); ++i) {
      if (i > 0) out += ',';
      out += Dump(*strings_[i]);
    }
    out += ']';
  }

 private:
  std::unordered_map<std::string, uint64_t> ids_;
  std::vector<const std::string*> strings_;
};

void AppendFrames(std::string& out, const analysis::ProfileTree& tree) {
  StringTable strings;
  strings.Intern("");
  std::vector<uint64_t> names, files;
  names.reserve(tree.frames().size());
  files.reserve(tree.frames().size());
  for (const analysis::Frame& frame : tree.frames()) {
    names.push_back(strings.Intern(frame.name));
    files.push_back(strings.Intern(frame.file));
  }
  out += ",\n\"strings\":";
  strings.AppendTo(out);
  const auto& frames = tree.frames();
  out += ",\n\"frames\":{";
  AppendColumn(out, "kind", frames, [](const analysis::Frame& frame) {
    return static_cast<uint64_t>(frame.kind);
  });
  out += ',';
  AppendColumn(out, "name", names, [](uint64_t id) { return id; });
  out += ',';
  AppendColumn(out, "file", files, [](uint64_t id) { return id; });
  out += ',';
  AppendColumn(out, "line", frames, [](const analysis::Frame& frame) {
    return static_cast<uint64_t>(frame.line);
  });
  out += '}';
}

void AppendNodes(std::string& out, const analysis::ProfileTree& tree) {
  std::vector<analysis::NodeIndex> indices(tree.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    indices[i] = static_cast<analysis::NodeIndex>(i);
  }
  out += ",\n\"nodes\":{";
  AppendColumn(out, "parent", indices, [&](analysis::NodeIndex i) {
    return static_cast<uint64_t>(tree.node(i).parent);
  });
  out += ',';
  AppendColumn(out, "frame", indices, [&](analysis::NodeIndex i) {
    return static_cast<uint64_t>(tree.node(i).frame);
  });
  out += '}';
}

void AppendValues(std::string& out, const analysis::ProfileTree& tree) {
  out += ",\n\"values\":[";
  // One look-up per node and metric; the columns are then written from
  // this copy of the sampled ones.
  std::vector<analysis::NodeIndex> nodes;
  std::vector<analysis::MetricStats> stats;
  for (analysis::MetricIndex m = 0; m < tree.metrics().size(); ++m) {
    nodes.clear();
    stats.clear();
    for (analysis::NodeIndex i = 0; i < tree.size(); ++i) {
      analysis::MetricStats node_stats = tree.stats(i, m);
      if (node_stats.count == 0) continue;
      nodes.push_back(i);
      stats.push_back(node_stats);
    }
    if (m > 0) out += ",\n";
    out += '{';
    AppendColumn(out, "node", nodes,
                 [](analysis::NodeIndex i) { return static_cast<uint64_t>(i); });
    out += ',';
    AppendColumn(out, "sum", stats,
                 [](const analysis::MetricStats& s) { return s.sum; });
    out += ',';
    AppendColumn(out, "count", stats,
                 [](const analysis::MetricStats& s) { return s.count; });
    out += ',';
    AppendColumn(out, "min", stats,
                 [](const analysis::MetricStats& s) { return s.min; });
    out += ',';
    AppendColumn(out, "max", stats,
                 [](const analysis::MetricStats& s) { return s.max; });
    out += '}';
  }
  out += ']';
}

}  // namespace

std::string RenderViewData(const analysis::ProfileTree& tree) {
  std::optional<analysis::MetricIndex> default_metric =
      analysis::DefaultMetric(tree);
  std::string out;
  // About what a node costs in the columns; saves the string's regrowths.
  out.reserve(tree.size() * 24 + tree.frames().size() * 16);
  out += "{\"format\":" + Dump(kViewDataFormatName) +
                    ",\"version\":" + Dump(kViewDataVersion) +
                    ",\n\"sources\":" + Dump(SourcesJson(tree)) +
                    ",\n\"metrics\":" + Dump(MetricsJson(tree)) +
                    ",\n\"defaultMetric\":" +
                    std::to_string(default_metric
                                       ? static_cast<long>(*default_metric)
                                       : -1L) +
                    ",\n\"kinds\":" + Dump(KindsJson());
  AppendFrames(out, tree);
  AppendNodes(out, tree);
  AppendValues(out, tree);
  out += "}\n";
  return out;
}

}  // namespace deepcontext::exporter
