// The columns both encodings of the view data (view_data.h, JSON, and
// view_data_binary.h) are written from, gathered from the tree once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::exporter {

// The exclusive samples of one metric, for the nodes that have any.
struct MetricSamples {
  std::vector<uint32_t> node;
  std::vector<double> sum, count, min, max;
};

struct ViewColumns {
  std::vector<std::string> strings; // interned names and files; [0] = ""
  std::vector<uint8_t> frame_kind;
  std::vector<uint32_t> frame_name, frame_file, frame_line;
  std::vector<uint32_t> parent, frame; // per node
  std::vector<MetricSamples> values;   // per metric
};

ViewColumns GatherViewColumns(const analysis::ProfileTree &tree);

// Only strings and frames of GatherViewColumns: what the binary form, which
// writes nodes and values straight from the tree, takes from it.
ViewColumns GatherFrameColumns(const analysis::ProfileTree &tree);

// The document's leading fields, without braces:
//   "format":..,"version":..,"sources":[..],"metrics":[..],
//   "defaultMetric":..,"kinds":[..],"strings":[..]
std::string ViewHeaderFields(const analysis::ProfileTree &tree,
                             const ViewColumns &columns);

} // namespace deepcontext::exporter
