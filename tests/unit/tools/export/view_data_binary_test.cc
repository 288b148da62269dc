#include "tools/export/view_data_binary.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include <nlohmann/json.hpp>

#include "tests/unit/tools/analysis/test_profiles.h"
#include "tools/export/view_data.h"

namespace deepcontext::exporter {
namespace {

using nlohmann::json;

// Reads the binary document back into the JSON form's shape, checking the
// layout's alignment on the way.
class BinaryReader {
public:
  BinaryReader(const std::string &bytes, const char (&magic)[8])
      : bytes_(bytes) {
    EXPECT_EQ(bytes_.compare(0, 8, std::string(magic, 8)), 0);
    uint32_t header_size = 0;
    std::memcpy(&header_size, bytes_.data() + 8, 4);
    header_ = json::parse(bytes_.substr(12, header_size));
    offset_ = 12 + header_size;
    Align();
  }

  json &header() { return header_; }

  template <typename T> json Take(size_t n) {
    EXPECT_EQ(offset_ % 8, 0u);
    EXPECT_LE(offset_ + n * sizeof(T), bytes_.size());
    json values = json::array();
    for (size_t i = 0; i < n; ++i) {
      T value;
      std::memcpy(&value, bytes_.data() + offset_ + i * sizeof(T), sizeof(T));
      values.push_back(value);
    }
    offset_ += n * sizeof(T);
    Align();
    return values;
  }

  bool AtEnd() const { return offset_ == bytes_.size(); }

private:
  void Align() { offset_ = (offset_ + 7) / 8 * 8; }

  const std::string &bytes_;
  json header_;
  size_t offset_ = 0;
};

// Reads both binary documents back into the JSON form's shape, checking
// the layout's alignment on the way.
json ReadBothDocuments(const std::string &tree_bytes,
                       const std::string &stats_bytes) {
  BinaryReader tree(tree_bytes, kViewBinaryMagic);
  BinaryReader stats(stats_bytes, kViewStatsMagic);
  json doc = tree.header();
  EXPECT_EQ(stats.header()["valueCounts"], doc["valueCounts"]);
  size_t nodes = doc["nodeCount"], frames = doc["frameCount"];
  doc["nodes"]["parent"] = tree.Take<uint32_t>(nodes);
  doc["nodes"]["frame"] = tree.Take<uint32_t>(nodes);
  doc["frames"]["kind"] = tree.Take<uint8_t>(frames);
  doc["frames"]["name"] = tree.Take<uint32_t>(frames);
  doc["frames"]["file"] = tree.Take<uint32_t>(frames);
  doc["frames"]["line"] = tree.Take<uint32_t>(frames);
  doc["values"] = json::array();
  for (size_t n : doc["valueCounts"]) {
    json values;
    values["node"] = tree.Take<uint32_t>(n);
    values["sum"] = tree.Take<double>(n);
    for (const char *key : {"count", "min", "max"}) {
      values[key] = stats.Take<double>(n);
    }
    doc["values"].push_back(values);
  }
  EXPECT_TRUE(tree.AtEnd());
  EXPECT_TRUE(stats.AtEnd());
  for (const char *key : {"nodeCount", "frameCount", "valueCounts"}) {
    doc.erase(key);
  }
  return doc;
}

TEST(ViewDataBinaryTest, SameDocumentAsTheJsonForm) {
  format::Profile rank0 = analysis::testing::MakeTrainingProfileOf("1", "0");
  format::Profile rank1 = analysis::testing::MakeTrainingProfileOf("2", "1");
  auto merged = analysis::ProfileTree::FromProfiles(
      {{&rank0, "a.dctx"}, {&rank1, "b.dctx"}});
  json from_binary = ReadBothDocuments(RenderViewBinary(merged),
                                       RenderViewStatsBinary(merged));
  json from_text = json::parse(RenderViewData(merged));
  EXPECT_EQ(from_binary, from_text);
  EXPECT_FALSE(from_text["values"][0]["node"].empty());
}

} // namespace
} // namespace deepcontext::exporter
