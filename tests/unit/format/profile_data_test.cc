#include "format/profile_data.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace deepcontext::format {
namespace {

TEST(ProfileData, FrameKindNamesAreDistinctAndKnown) {
  std::set<std::string> names;
  for (int k = 0; k <= kMaxFrameKind; ++k) {
    const std::string name = FrameKindName(static_cast<FrameKind>(k));
    EXPECT_NE(name, "unknown") << k;
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
  }
  EXPECT_STREQ(FrameKindName(FrameKind::kPythonFrame), "python");
  EXPECT_STREQ(FrameKindName(FrameKind::kOperator), "operator");
  EXPECT_STREQ(FrameKindName(FrameKind::kGpuKernel), "gpu_kernel");
  EXPECT_STREQ(FrameKindName(static_cast<FrameKind>(kMaxFrameKind + 1)),
               "unknown");
}

TEST(ProfileData, DefaultProfileHasEmptyStringAndRoot) {
  const Profile profile;
  ASSERT_EQ(profile.strings.size(), 1u);
  EXPECT_EQ(profile.strings[0], "");
  ASSERT_EQ(profile.nodes.size(), 1u);
  EXPECT_EQ(profile.nodes[0].kind, FrameKind::kRoot);
  EXPECT_EQ(profile.nodes[0].parent, 0u);
}

TEST(ProfileData, MetadataReturnsFirstMatchOrEmpty) {
  Profile profile;
  profile.metadata = {{"host", "a"}, {"pid", "7"}, {"host", "b"}};
  EXPECT_EQ(profile.Metadata("host"), "a");
  EXPECT_EQ(profile.Metadata("pid"), "7");
  EXPECT_EQ(profile.Metadata("rank"), "");
}

}  // namespace
}  // namespace deepcontext::format
