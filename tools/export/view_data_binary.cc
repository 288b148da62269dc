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

size_t Aligned(size_t size) { return (size + 7) / 8 * 8; }

// The samples that the documents carry (those with a count, as in the JSON
// form) per metric.
std::vector<size_t> CountSamples(const analysis::ProfileTree &tree) {
  std::vector<size_t> counts(tree.metrics().size(), 0);
  for (analysis::NodeIndex i = 0; i < tree.size(); ++i) {
    for (const format::MetricValue &sample : tree.samples(i)) {
      if (sample.count != 0 && sample.metric < counts.size()) {
        ++counts[sample.metric];
      }
    }
  }
  return counts;
}

std::string ValueCountsJson(const std::vector<size_t> &counts) {
  std::string out = "\"valueCounts\":[";
  for (size_t m = 0; m < counts.size(); ++m) {
    if (m > 0)
      out += ',';
    out += std::to_string(counts[m]);
  }
  return out + ']';
}

// One document: magic, header, then arrays of the given byte sizes, sized
// once and filled in place (a million-node tree is tens of megabytes, so
// every extra copy shows in the time to the first screen).
class Document {
public:
  Document(const char (&magic)[8], const std::string &header,
           const std::vector<size_t> &array_bytes) {
    size_t size = Aligned(sizeof(magic) + sizeof(uint32_t) + header.size());
    for (size_t bytes : array_bytes) {
      offsets_.push_back(size);
      size += Aligned(bytes);
    }
    out_.resize(size); // zero: the padding
    std::memcpy(out_.data(), magic, sizeof(magic));
    uint32_t header_size = static_cast<uint32_t>(header.size());
    std::memcpy(out_.data() + 8, &header_size, sizeof(header_size));
    std::memcpy(out_.data() + 12, header.data(), header.size());
  }

  // The start of array i, as T.
  template <typename T> T *Array(size_t i) {
    return reinterpret_cast<T *>(out_.data() + offsets_[i]);
  }

  template <typename T> void Fill(size_t i, const std::vector<T> &values) {
    std::memcpy(Array<T>(i), values.data(), values.size() * sizeof(T));
  }

  std::string Take() { return std::move(out_); }

private:
  std::string out_;
  std::vector<size_t> offsets_;
};

} // namespace

std::string RenderViewBinary(const analysis::ProfileTree &tree) {
  ViewColumns columns = GatherFrameColumns(tree);
  const size_t nodes = tree.size();
  const size_t frames = columns.frame_kind.size();
  const std::vector<size_t> counts = CountSamples(tree);
  std::string header = "{" + ViewHeaderFields(tree, columns) +
                       ",\n\"nodeCount\":" + std::to_string(nodes) +
                       ",\"frameCount\":" + std::to_string(frames) + "," +
                       ValueCountsJson(counts) + "}";
  std::vector<size_t> sizes = {nodes * 4,  nodes * 4,  frames,
                               frames * 4, frames * 4, frames * 4};
  for (size_t n : counts) {
    sizes.push_back(n * 4);
    sizes.push_back(n * 8);
  }
  Document doc(kViewBinaryMagic, header, sizes);
  uint32_t *parent = doc.Array<uint32_t>(0);
  uint32_t *frame = doc.Array<uint32_t>(1);
  for (analysis::NodeIndex i = 0; i < nodes; ++i) {
    parent[i] = tree.node(i).parent;
    frame[i] = tree.node(i).frame;
  }
  doc.Fill(2, columns.frame_kind);
  doc.Fill(3, columns.frame_name);
  doc.Fill(4, columns.frame_file);
  doc.Fill(5, columns.frame_line);
  std::vector<uint32_t *> node_out;
  std::vector<double *> sum_out;
  for (size_t m = 0; m < counts.size(); ++m) {
    node_out.push_back(doc.Array<uint32_t>(6 + 2 * m));
    sum_out.push_back(doc.Array<double>(7 + 2 * m));
  }
  for (analysis::NodeIndex i = 0; i < nodes; ++i) {
    for (const format::MetricValue &sample : tree.samples(i)) {
      if (sample.count == 0 || sample.metric >= counts.size())
        continue;
      *node_out[sample.metric]++ = i;
      *sum_out[sample.metric]++ = sample.sum;
    }
  }
  return doc.Take();
}

std::string RenderViewStatsBinary(const analysis::ProfileTree &tree) {
  const std::vector<size_t> counts = CountSamples(tree);
  std::vector<size_t> sizes;
  for (size_t n : counts)
    sizes.insert(sizes.end(), 3, n * 8);
  Document doc(kViewStatsMagic, "{" + ValueCountsJson(counts) + "}", sizes);
  std::vector<double *> count_out, min_out, max_out;
  for (size_t m = 0; m < counts.size(); ++m) {
    count_out.push_back(doc.Array<double>(3 * m));
    min_out.push_back(doc.Array<double>(3 * m + 1));
    max_out.push_back(doc.Array<double>(3 * m + 2));
  }
  for (analysis::NodeIndex i = 0; i < tree.size(); ++i) {
    for (const format::MetricValue &sample : tree.samples(i)) {
      if (sample.count == 0 || sample.metric >= counts.size())
        continue;
      *count_out[sample.metric]++ = static_cast<double>(sample.count);
      *min_out[sample.metric]++ = sample.min;
      *max_out[sample.metric]++ = sample.max;
    }
  }
  return doc.Take();
}

} // namespace deepcontext::exporter
