#include "runtime/python/version_support.h"

#include <gtest/gtest.h>

#include <string>

namespace deepcontext::python {
namespace {

TEST(VersionSupportTest, ParsesPyGetVersionText) {
  PythonVersion version;
  ASSERT_TRUE(ParseVersionString("3.9.18 (main, May  9 2026) [GCC 12]",
                                 &version));
  EXPECT_EQ(version.major, 3);
  EXPECT_EQ(version.minor, 9);
  EXPECT_EQ(version.micro, 18);
  ASSERT_TRUE(ParseVersionString("3.10.0rc2 (default)", &version));
  EXPECT_EQ(version.minor, 10);
  EXPECT_EQ(version.micro, 0);
  ASSERT_TRUE(ParseVersionString("3.13", &version));
  EXPECT_EQ(version.minor, 13);
  EXPECT_EQ(version.micro, 0);
}

TEST(VersionSupportTest, RejectsMalformedText) {
  PythonVersion version{7, 7, 7};
  EXPECT_FALSE(ParseVersionString("", &version));
  EXPECT_FALSE(ParseVersionString("python", &version));
  EXPECT_FALSE(ParseVersionString("3", &version));
  EXPECT_FALSE(ParseVersionString("3.", &version));
  EXPECT_FALSE(ParseVersionString("3.x", &version));
  EXPECT_FALSE(ParseVersionString("3.12.", &version));
  EXPECT_EQ(version.major, 7);  // untouched on failure
}

TEST(VersionSupportTest, DecodesHexVersion) {
  const PythonVersion version = DecodeHexVersion(0x030C01F0);  // 3.12.1 final
  EXPECT_EQ(version.major, 3);
  EXPECT_EQ(version.minor, 12);
  EXPECT_EQ(version.micro, 1);
  EXPECT_EQ(FormatVersion(DecodeHexVersion(0x030D00F0)), "3.13.0");
}

TEST(VersionSupportTest, RejectsVersionsOutsideTheSupportedRange) {
  std::string why;
  EXPECT_EQ(FindLayout({3, 14, 0}, &why), nullptr);
  EXPECT_EQ(why,
            "CPython 3.14 is not supported by the frame reader "
            "(supported: 3.9-3.13)");
  EXPECT_EQ(FindLayout({3, 8, 18}, &why), nullptr);
  EXPECT_NE(why.find("CPython 3.8 is not supported"), std::string::npos);
  EXPECT_EQ(FindLayout({2, 7, 18}, &why), nullptr);
  EXPECT_NE(why.find("CPython 2.7 is not supported"), std::string::npos);
  EXPECT_EQ(FindLayout({4, 10, 0}, nullptr), nullptr);
}

#if defined(__x86_64__)
TEST(VersionSupportTest, HasALayoutForEverySupportedMinor) {
  for (int minor = kFirstSupportedMinor; minor <= kLastSupportedMinor;
       ++minor) {
    std::string why;
    const FrameLayout* layout = FindLayout({3, minor, 0}, &why);
    ASSERT_NE(layout, nullptr) << "3." << minor << ": " << why;
    EXPECT_EQ(layout->major, 3);
    EXPECT_EQ(layout->minor, minor);
    EXPECT_EQ(layout->family, minor <= 10 ? FrameFamily::kFrameObject
                                          : FrameFamily::kInterpreterFrame);
    EXPECT_GE(layout->frame_previous, 0);
    EXPECT_GE(layout->frame_code, 0);
    EXPECT_EQ(layout->code_qualname >= 0, minor >= 11);
    EXPECT_EQ(layout->state_ready_mask != 0, minor <= 11);
    EXPECT_EQ(layout->owner_cstack >= 0, minor >= 12);
    EXPECT_EQ(layout->debug_check_count > 0, minor >= 13);
  }
}
#endif

}  // namespace
}  // namespace deepcontext::python
