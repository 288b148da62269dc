#include "format/profile_stream.h"

#include <gtest/gtest.h>

#include <string>

#include "format/dctx_file.h"
#include "tests/unit/format/format_test_util.h"

namespace deepcontext::format {
namespace {

SectionBody Metadata(const Profile& p) {
  SectionBody body;
  for (const auto& [key, value] : p.metadata) body.AddMetadata(key, value);
  return body;
}
SectionBody Strings(const Profile& p) {
  SectionBody body;
  for (const std::string& s : p.strings) body.AddString(s);
  return body;
}
SectionBody Nodes(const Profile& p) {
  SectionBody body;
  for (const Node& node : p.nodes) body.AddNode(node);
  return body;
}
SectionBody Metrics(const Profile& p) {
  SectionBody body;
  for (const MetricDescriptor& metric : p.metrics) body.AddMetric(metric);
  return body;
}
SectionBody Values(const Profile& p) {
  SectionBody body;
  for (const MetricValue& value : p.values) body.AddValue(value);
  return body;
}

// Written section by section in the usual order, the file is byte for byte
// what WriteProfileFile writes: deflate's output does not depend on how its
// input was split.
TEST(ProfileStream, WritesTheSameBytesAsTheWholeProfileWriter) {
  const Profile profile = MakeSampleProfile(5000);
  ScratchDir dir;
  const std::string path = dir.path() + "/streamed.dctx";
  ProfileStreamWriter writer;
  ASSERT_TRUE(writer.Begin(path).ok());
  ASSERT_TRUE(writer.AddMetadata(Metadata(profile)).ok());
  ASSERT_TRUE(writer.AddStrings(Strings(profile)).ok());
  ASSERT_TRUE(writer.AddNodes(Nodes(profile)).ok());
  ASSERT_TRUE(writer.AddMetrics(Metrics(profile)).ok());
  ASSERT_TRUE(writer.AddValues(Values(profile)).ok());
  ASSERT_TRUE(writer.Finish().ok());
  EXPECT_EQ(ReadBytes(path), Encode(profile));
  EXPECT_EQ(dir.List(), std::vector<std::string>{"streamed.dctx"});
}

TEST(ProfileStream, SectionsInAnyOrderReadBackTheSame) {
  const Profile profile = MakeSampleProfile(300);
  ScratchDir dir;
  const std::string path = dir.path() + "/p.dctx";
  ProfileStreamWriter writer;
  ASSERT_TRUE(writer.Begin(path).ok());
  ASSERT_TRUE(writer.AddNodes(Nodes(profile)).ok());
  ASSERT_TRUE(writer.AddValues(Values(profile)).ok());
  ASSERT_TRUE(writer.AddStrings(Strings(profile)).ok());
  ASSERT_TRUE(writer.AddMetrics(Metrics(profile)).ok());
  ASSERT_TRUE(writer.AddMetadata(Metadata(profile)).ok());
  ASSERT_TRUE(writer.Finish().ok());
  const StatusOr<Profile> read = ReadProfileFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ExpectSameProfile(profile, *read);
}

TEST(ProfileStream, UnfinishedWritesLeaveNothingBehind) {
  ScratchDir dir;
  const std::string path = dir.path() + "/p.dctx";
  {
    ProfileStreamWriter writer;
    ASSERT_TRUE(writer.Begin(path).ok());
    ASSERT_TRUE(writer.AddNodes(Nodes(MakeSampleProfile(10))).ok());
    EXPECT_EQ(dir.List().size(), 1u);  // the temporary file
  }
  EXPECT_TRUE(dir.List().empty());
  ProfileStreamWriter missing;
  const Status begun = missing.Begin(dir.path() + "/no/such/p.dctx");
  ASSERT_FALSE(begun.ok());
  const std::string& error = begun.message();
  EXPECT_NE(error.find("cannot create temporary file"), std::string::npos)
      << error;
  // The first error stays: later calls say it again rather than succeed.
  EXPECT_EQ(missing.AddNodes(SectionBody()).message(), error);
  EXPECT_EQ(missing.Finish().message(), error);
  EXPECT_FALSE(missing.Finish().ok());
  EXPECT_EQ(ProfileStreamWriter().Finish().message(), "profile writer not started");
}

}  // namespace
}  // namespace deepcontext::format
