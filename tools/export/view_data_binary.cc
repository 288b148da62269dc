#include "tools/export/view_data_binary.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tools/export/view_columns.h"

namespace deepcontext::exporter {

namespace {

// The page reads the arrays as typed arrays, which use the machine's byte
// order; every platform DeepContext builds for is little-endian.
static_assert(std::endian::native == std::endian::little);

void Pad(std::string& out) {
  out.append((8 - out.size() % 8) % 8, '\0');
}

template <typename T>
void AppendArray(std::string& out, const std::vector<T>& values) {
  out.append(reinterpret_cast<const char*>(values.data()),
             values.size() * sizeof(T));
  Pad(out);
}

}  // namespace

std::string RenderViewBinary(const analysis::ProfileTree& tree) {
  ViewColumns columns = GatherViewColumns(tree);
  std::string header = "{" + ViewHeaderFields(tree, columns) +
                       ",\n\"nodeCount\":" + std::to_string(columns.parent.size()) +
                       ",\"frameCount\":" + std::to_string(columns.frame_kind.size()) +
                       ",\"valueCounts\":[";
  for (size_t m = 0; m < columns.values.size(); ++m) {
    if (m > 0) header += ',';
    header += std::to_string(columns.values[m].node.size());
  }
  header += "]}";

  std::string out(kViewBinaryMagic, sizeof(kViewBinaryMagic));
  uint32_t header_size = static_cast<uint32_t>(header.size());
  out.append(reinterpret_cast<const char*>(&header_size), sizeof(header_size));
  out += header;
  Pad(out);
  AppendArray(out, columns.parent);
  AppendArray(out, columns.frame);
  AppendArray(out, columns.frame_kind);
  AppendArray(out, columns.frame_name);
  AppendArray(out, columns.frame_file);
  AppendArray(out, columns.frame_line);
  for (const MetricSamples& samples : columns.values) {
    AppendArray(out, samples.node);
    AppendArray(out, samples.sum);
    AppendArray(out, samples.count);
    AppendArray(out, samples.min);
    AppendArray(out, samples.max);
  }
  return out;
}

}  // namespace deepcontext::exporter
