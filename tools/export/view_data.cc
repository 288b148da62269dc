#include "tools/export/view_data.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tools/export/view_columns.h"

namespace deepcontext::exporter {

namespace {

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

void AppendNumber(std::string& out, uint32_t value) {
  char buffer[16];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, ec == std::errc() ? end : buffer);
}

template <typename T>
void AppendColumn(std::string& out, std::string_view key,
                  const std::vector<T>& values) {
  out += '"';
  out += key;
  out += "\":[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    if constexpr (std::is_same_v<T, uint8_t>) {
      AppendNumber(out, static_cast<uint32_t>(values[i]));
    } else {
      AppendNumber(out, values[i]);
    }
  }
  out += ']';
}

}  // namespace

std::string RenderViewData(const analysis::ProfileTree& tree) {
  ViewColumns columns = GatherViewColumns(tree);
  std::string out;
  // About what a node costs in the columns; saves the string's regrowths.
  out.reserve(tree.size() * 24 + tree.frames().size() * 16);
  out += '{';
  out += ViewHeaderFields(tree, columns);
  out += ",\n\"frames\":{";
  AppendColumn(out, "kind", columns.frame_kind);
  out += ',';
  AppendColumn(out, "name", columns.frame_name);
  out += ',';
  AppendColumn(out, "file", columns.frame_file);
  out += ',';
  AppendColumn(out, "line", columns.frame_line);
  out += "},\n\"nodes\":{";
  AppendColumn(out, "parent", columns.parent);
  out += ',';
  AppendColumn(out, "frame", columns.frame);
  out += "},\n\"values\":[";
  for (size_t m = 0; m < columns.values.size(); ++m) {
    const MetricSamples& samples = columns.values[m];
    if (m > 0) out += ",\n";
    out += '{';
    AppendColumn(out, "node", samples.node);
    out += ',';
    AppendColumn(out, "sum", samples.sum);
    out += ',';
    AppendColumn(out, "count", samples.count);
    out += ',';
    AppendColumn(out, "min", samples.min);
    out += ',';
    AppendColumn(out, "max", samples.max);
    out += '}';
  }
  out += "]}\n";
  return out;
}

}  // namespace deepcontext::exporter
