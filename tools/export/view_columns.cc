#include "tools/export/view_columns.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "format/profile_data.h"
#include "tools/analysis/metric_selection.h"
#include "tools/export/json_common.h"
#include "tools/export/view_data.h"

namespace deepcontext::exporter {

namespace {

using Json = nlohmann::ordered_json;

Json KindsJson() {
  Json kinds = Json::array();
  for (uint8_t kind = 0; kind <= format::kMaxFrameKind; ++kind) {
    kinds.push_back(
        format::FrameKindName(static_cast<format::FrameKind>(kind)));
  }
  return kinds;
}

} // namespace

ViewColumns GatherFrameColumns(const analysis::ProfileTree &tree) {
  ViewColumns columns;
  const size_t frames = tree.frames().size();
  // Ids of distinct strings: open addressing over string ids, as a
  // node-based map would allocate once per string of a million-frame tree.
  std::vector<uint32_t> slots(64, UINT32_MAX);
  std::hash<std::string_view> hash;
  auto intern = [&](const std::string &text) -> uint32_t {
    if ((columns.strings.size() + 1) * 2 > slots.size()) {
      slots.assign(slots.size() * 2, UINT32_MAX);
      for (uint32_t id = 0; id < columns.strings.size(); ++id) {
        size_t i = hash(columns.strings[id]) & (slots.size() - 1);
        while (slots[i] != UINT32_MAX)
          i = (i + 1) & (slots.size() - 1);
        slots[i] = id;
      }
    }
    const size_t mask = slots.size() - 1;
    for (size_t i = hash(text) & mask;; i = (i + 1) & mask) {
      if (slots[i] == UINT32_MAX) {
        slots[i] = static_cast<uint32_t>(columns.strings.size());
        columns.strings.push_back(text);
        return slots[i];
      }
      if (columns.strings[slots[i]] == text)
        return slots[i];
    }
  };
  intern("");
  columns.frame_kind.reserve(frames);
  columns.frame_name.reserve(frames);
  columns.frame_file.reserve(frames);
  columns.frame_line.reserve(frames);
  // Neighbouring frames mostly share a file: compare before hashing.
  const std::string *last_file = nullptr;
  uint32_t last_file_id = 0;
  for (const analysis::Frame &frame : tree.frames()) {
    columns.frame_kind.push_back(static_cast<uint8_t>(frame.kind));
    columns.frame_name.push_back(intern(frame.name));
    if (last_file == nullptr || *last_file != frame.file) {
      last_file = &frame.file;
      last_file_id = intern(frame.file);
    }
    columns.frame_file.push_back(last_file_id);
    columns.frame_line.push_back(frame.line);
  }
  return columns;
}

ViewColumns GatherViewColumns(const analysis::ProfileTree &tree) {
  ViewColumns columns = GatherFrameColumns(tree);
  columns.parent.reserve(tree.size());
  columns.frame.reserve(tree.size());
  for (analysis::NodeIndex i = 0; i < tree.size(); ++i) {
    columns.parent.push_back(tree.node(i).parent);
    columns.frame.push_back(tree.node(i).frame);
  }
  columns.values.resize(tree.metrics().size());
  for (analysis::NodeIndex i = 0; i < tree.size(); ++i) {
    for (const format::MetricValue &sample : tree.samples(i)) {
      if (sample.count == 0 || sample.metric >= columns.values.size())
        continue;
      MetricSamples &samples = columns.values[sample.metric];
      samples.node.push_back(i);
      samples.sum.push_back(sample.sum);
      samples.count.push_back(static_cast<double>(sample.count));
      samples.min.push_back(sample.min);
      samples.max.push_back(sample.max);
    }
  }
  return columns;
}

std::string ViewHeaderFields(const analysis::ProfileTree &tree,
                             const ViewColumns &columns) {
  std::optional<analysis::MetricIndex> default_metric =
      analysis::DefaultMetric(tree);
  std::string out =
      "\"format\":" + DumpJson(kViewDataFormatName) +
      ",\"version\":" + DumpJson(kViewDataVersion) +
      ",\n\"sources\":" + DumpJson(SourcesJson(tree)) +
      ",\n\"metrics\":" + DumpJson(MetricsJson(tree)) +
      ",\n\"defaultMetric\":" +
      std::to_string(default_metric ? static_cast<long>(*default_metric)
                                    : -1L) +
      ",\n\"kinds\":" + DumpJson(KindsJson()) + ",\n\"strings\":[";
  for (size_t i = 0; i < columns.strings.size(); ++i) {
    if (i > 0)
      out += ',';
    out += DumpJson(columns.strings[i]);
  }
  out += ']';
  return out;
}

} // namespace deepcontext::exporter
