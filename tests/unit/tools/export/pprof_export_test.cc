#include "tools/export/pprof_export.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <map>
#include <string>
#include <vector>

#include "tests/unit/tools/analysis/test_profiles.h"
#include "tools/export/proto/profile.pb.h"
#include "tools/merge/rank_merger.h"

namespace deepcontext::exporter {
namespace {

using analysis::ProfileTree;
using analysis::testing::MakeTrainingProfile;
using analysis::testing::MakeTrainingProfileOf;

// Decompresses a gzip stream with zlib, independently of the writer.
std::string Gunzip(const std::string& bytes) {
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, 15 + 16), Z_OK);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buffer[4096];
  int status = Z_OK;
  while (status == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    status = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - stream.avail_out);
  }
  EXPECT_EQ(status, Z_STREAM_END);
  EXPECT_EQ(stream.avail_in, 0u);
  inflateEnd(&stream);
  return out;
}

perftools::profiles::Profile Decode(const ProfileTree& tree) {
  const std::string bytes = RenderPprof(tree);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  perftools::profiles::Profile profile;
  EXPECT_TRUE(profile.ParseFromString(Gunzip(bytes)));
  return profile;
}

TEST(PprofExport, DecodesAsAValidProfileProto) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile(), "a.dctx");
  perftools::profiles::Profile profile = Decode(tree);
  const auto& strings = profile.string_table();
  ASSERT_GT(strings.size(), 0);
  EXPECT_EQ(strings[0], "");
  auto str = [&strings](int64_t id) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, strings.size());
    return strings[static_cast<int>(id)];
  };

  // Sample types in metric order, pprof's unit names.
  ASSERT_EQ(profile.sample_type_size(), 2);
  EXPECT_EQ(str(profile.sample_type(0).type()), "calls");
  EXPECT_EQ(str(profile.sample_type(0).unit()), "count");
  EXPECT_EQ(str(profile.sample_type(1).type()), "cpu_time");
  EXPECT_EQ(str(profile.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(str(profile.default_sample_type()), "cpu_time");

  // Every location and function id a sample uses exists.
  std::map<uint64_t, std::string> function_names;
  for (const auto& function : profile.function()) {
    function_names[function.id()] = str(function.name());
  }
  std::map<uint64_t, std::string> location_names;
  for (const auto& location : profile.location()) {
    ASSERT_EQ(location.line_size(), 1);
    ASSERT_TRUE(function_names.contains(location.line(0).function_id()));
    location_names[location.id()] = function_names[location.line(0).function_id()];
  }
  int64_t cpu_total = 0;
  std::vector<std::string> convolution_stack;
  for (const auto& sample : profile.sample()) {
    ASSERT_EQ(sample.value_size(), 2);
    cpu_total += sample.value(1);
    std::vector<std::string> stack;
    for (uint64_t id : sample.location_id()) {
      ASSERT_TRUE(location_names.contains(id)) << id;
      stack.push_back(location_names[id]);
    }
    if (stack.front() == "aten::convolution") convolution_stack = stack;
  }
  EXPECT_EQ(cpu_total, 100'000'000);  // the profile's 100 ms
  // Leaf first, up to the thread; the root is not a frame.
  EXPECT_EQ(convolution_stack,
            (std::vector<std::string>{"aten::convolution", "aten::conv2d",
                                      "[forward]", "forward", "train_step",
                                      "<module>", "thread main"}));
  EXPECT_EQ(profile.time_nanos(), 1'000'000'000);
  EXPECT_EQ(profile.duration_nanos(), 2'000'000'000);
  ASSERT_EQ(profile.comment_size(), 1);
  EXPECT_EQ(str(profile.comment(0)), "python train.py --epochs 1");
}

TEST(PprofExport, LeavesOutTheRankCompanionMetrics) {
  merge::RankMerger merger;
  ASSERT_TRUE(merger.Add(MakeTrainingProfileOf("1", "0"), "").ok());
  ASSERT_TRUE(merger.Add(MakeTrainingProfileOf("2", "1"), "").ok());
  ProfileTree tree = ProfileTree::FromProfile(merger.Finish());
  perftools::profiles::Profile profile = Decode(tree);
  EXPECT_EQ(profile.sample_type_size(), 2);
}

}  // namespace
}  // namespace deepcontext::exporter
