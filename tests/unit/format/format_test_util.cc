#include "tests/unit/format/format_test_util.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "format/dctx_container.h"
#include "format/dctx_file.h"

namespace deepcontext::format {
namespace {

uint64_t Bits(double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

}  // namespace

Profile MakeSampleProfile(uint32_t num_nodes) {
  Profile profile;
  profile.metadata = {
      {"command_line", "python train.py --epochs 3 --name=\"modèle ✓\""},
      {"start_time_ns", "1700000000000000000"},
      {"end_time_ns", "1700000012345678901"},
      {"host", "gpu-node-07"},
      {"pid", "4242"},
      {"rank", "3"},
      {"python_version", "3.11.4"},
      {"torch_version", "2.3.0+cu121"},
      {"empty_value", ""},
      {"binary\x01key", std::string("nul\0inside", 10)},
  };
  profile.strings = {"",          "train.py", "model.py",           "训练循环",
                     "forward",   "résumé",   "aten::linear",       "🔥kernel",
                     "[forward]", "main",     std::string(300, 'x')};
  uint64_t state = 0x9e3779b97f4a7c15;
  auto next = [&state]() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (uint32_t i = 1; i < num_nodes; ++i) {
    Node node;
    node.parent = static_cast<NodeId>(next() % i);
    node.kind = static_cast<FrameKind>(1 + next() % kMaxFrameKind);
    node.name = static_cast<StringId>(next() % profile.strings.size());
    node.file = static_cast<StringId>(next() % profile.strings.size());
    node.line = static_cast<uint32_t>(next() % 5 == 0 ? 0 : next());
    profile.nodes.push_back(node);
  }
  profile.metrics = {{"calls", "count", "number of calls"},
                     {"cpu_time", "ns", "thread CPU time, exclusive"},
                     {"wall_time", "ns", "wall-clock time, exclusive ⏱"}};
  for (uint32_t i = 0; i < num_nodes; ++i) {
    for (MetricId m = 0; m < profile.metrics.size(); ++m) {
      if ((i + m) % 4 == 3) continue;
      MetricValue value;
      value.node = i;
      value.metric = m;
      value.count = next() % 100000;
      value.min = static_cast<double>(next() % 1000) / 7;
      value.max = value.min * 3 + 0.25;
      value.sum = value.max * static_cast<double>(value.count);
      profile.values.push_back(value);
    }
  }
  if (!profile.values.empty()) {
    profile.values.front().sum = std::numeric_limits<double>::quiet_NaN();
    profile.values.back().min = -0.0;
    profile.values.back().count = UINT64_MAX;
  }
  return profile;
}

void ExpectSameProfile(const Profile& expected, const Profile& actual) {
  EXPECT_EQ(expected.metadata, actual.metadata);
  EXPECT_EQ(expected.strings, actual.strings);
  ASSERT_EQ(expected.nodes.size(), actual.nodes.size());
  for (size_t i = 0; i < expected.nodes.size(); ++i) {
    const Node& e = expected.nodes[i];
    const Node& a = actual.nodes[i];
    EXPECT_EQ(e.parent, a.parent) << "node " << i;
    EXPECT_EQ(e.kind, a.kind) << "node " << i;
    EXPECT_EQ(e.name, a.name) << "node " << i;
    EXPECT_EQ(e.file, a.file) << "node " << i;
    EXPECT_EQ(e.line, a.line) << "node " << i;
  }
  ASSERT_EQ(expected.metrics.size(), actual.metrics.size());
  for (size_t i = 0; i < expected.metrics.size(); ++i) {
    EXPECT_EQ(expected.metrics[i].name, actual.metrics[i].name);
    EXPECT_EQ(expected.metrics[i].unit, actual.metrics[i].unit);
    EXPECT_EQ(expected.metrics[i].description, actual.metrics[i].description);
  }
  ASSERT_EQ(expected.values.size(), actual.values.size());
  for (size_t i = 0; i < expected.values.size(); ++i) {
    const MetricValue& e = expected.values[i];
    const MetricValue& a = actual.values[i];
    EXPECT_EQ(e.node, a.node) << "value " << i;
    EXPECT_EQ(e.metric, a.metric) << "value " << i;
    EXPECT_EQ(e.count, a.count) << "value " << i;
    EXPECT_EQ(Bits(e.sum), Bits(a.sum)) << "value " << i;
    EXPECT_EQ(Bits(e.min), Bits(a.min)) << "value " << i;
    EXPECT_EQ(Bits(e.max), Bits(a.max)) << "value " << i;
  }
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

std::string Wrap(const std::string& payload, uint16_t major, uint16_t minor) {
  StatusOr<std::string> file = WrapPayload(payload, major, minor);
  EXPECT_TRUE(file.ok()) << file.status().message();
  return file.ok() ? *file : std::string();
}

std::string Encode(const Profile& profile) {
  StatusOr<std::string> bytes = EncodeProfile(profile);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  return bytes.ok() ? *bytes : std::string();
}

}  // namespace deepcontext::format
