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
  explicit BinaryReader(const std::string& bytes) : bytes_(bytes) {}

  json Read() {
    EXPECT_EQ(bytes_.compare(0, 8, std::string(kViewBinaryMagic, 8)), 0);
    uint32_t header_size = 0;
    std::memcpy(&header_size, bytes_.data() + 8, 4);
    json doc = json::parse(bytes_.substr(12, header_size));
    offset_ = 12 + header_size;
    Align();
    size_t nodes = doc["nodeCount"], frames = doc["frameCount"];
    doc["nodes"]["parent"] = Take<uint32_t>(nodes);
    doc["nodes"]["frame"] = Take<uint32_t>(nodes);
    doc["frames"]["kind"] = Take<uint8_t>(frames);
    doc["frames"]["name"] = Take<uint32_t>(frames);
    doc["frames"]["file"] = Take<uint32_t>(frames);
    doc["frames"]["line"] = Take<uint32_t>(frames);
    doc["values"] = json::array();
    for (size_t n : doc["valueCounts"]) {
      json values;
      values["node"] = Take<uint32_t>(n);
      for (const char* key : {"sum", "count", "min", "max"}) {
        values[key] = Take<double>(n);
      }
      doc["values"].push_back(values);
    }
    EXPECT_EQ(offset_, bytes_.size());
    for (const char* key : {"nodeCount", "frameCount", "valueCounts"}) {
      doc.erase(key);
    }
    return doc;
  }

 private:
  void Align() { offset_ = (offset_ + 7) / 8 * 8; }

  template <typename T>
  json Take(size_t n) {
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

  const std::string& bytes_;
  size_t offset_ = 0;
};

TEST(ViewDataBinaryTest, SameDocumentAsTheJsonForm) {
  format::Profile rank0 = analysis::testing::MakeTrainingProfileOf("1", "0");
  format::Profile rank1 = analysis::testing::MakeTrainingProfileOf("2", "1");
  auto merged = analysis::ProfileTree::FromProfiles(
      {{&rank0, "a.dctx"}, {&rank1, "b.dctx"}});
  std::string bytes = RenderViewBinary(merged);
  json from_binary = BinaryReader(bytes).Read();
  json from_text = json::parse(RenderViewData(merged));
  EXPECT_EQ(from_binary, from_text);
}

}  // namespace
}  // namespace deepcontext::exporter
