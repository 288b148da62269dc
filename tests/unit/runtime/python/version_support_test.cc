#include "runtime/python/version_support.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace deepcontext::python {
namespace {

// The generated layout for 3.<minor> on this architecture, or nullptr.
const FrameLayout* LayoutFor(int minor) {
  const StatusOr<const FrameLayout*> layout = FindLayout({3, minor, 0});
  return layout.ok() ? *layout : nullptr;
}

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
  StatusOr<const FrameLayout*> layout = FindLayout({3, 14, 0});
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().message(),
            "CPython 3.14 is not supported by the frame reader "
            "(supported: 3.9-3.13)");
  layout = FindLayout({3, 8, 18});
  ASSERT_FALSE(layout.ok());
  EXPECT_NE(layout.status().message().find("CPython 3.8 is not supported"),
            std::string::npos);
  layout = FindLayout({2, 7, 18});
  ASSERT_FALSE(layout.ok());
  EXPECT_NE(layout.status().message().find("CPython 2.7 is not supported"),
            std::string::npos);
  EXPECT_FALSE(FindLayout({4, 10, 0}).ok());
}

// A fake _PyRuntime whose _Py_DebugOffsets agree with `layout`.
std::vector<unsigned char> DebugOffsetsFor(const FrameLayout& layout) {
  std::vector<unsigned char> runtime(4096, 0);
  std::memcpy(runtime.data(), "xdebugpy", 8);
  for (int i = 0; i < layout.debug_check_count; ++i) {
    const uint64_t value = layout.debug_checks[i].expected;
    std::memcpy(runtime.data() + layout.debug_checks[i].position, &value, 8);
  }
  return runtime;
}

TEST(VersionSupportTest, DebugOffsetsMustAgreeWithTheLayout) {
  if (LayoutFor(13) == nullptr) GTEST_SKIP() << "no layout here";
  const FrameLayout& layout = *LayoutFor(13);
  ASSERT_GT(layout.debug_check_count, 0);
  std::vector<unsigned char> runtime = DebugOffsetsFor(layout);
  Status verified = VerifyDebugOffsets(layout, runtime.data());
  EXPECT_TRUE(verified.ok()) << verified.message();

  runtime[0] = 'X';
  verified = VerifyDebugOffsets(layout, runtime.data());
  EXPECT_FALSE(verified.ok());
  EXPECT_NE(verified.message().find("cookie"), std::string::npos)
      << verified.message();

  runtime = DebugOffsetsFor(layout);
  runtime[layout.debug_free_threaded] = 1;
  verified = VerifyDebugOffsets(layout, runtime.data());
  EXPECT_FALSE(verified.ok());
  EXPECT_NE(verified.message().find("free-threaded"), std::string::npos)
      << verified.message();

  runtime = DebugOffsetsFor(layout);
  const DebugOffsetCheck& last = layout.debug_checks[layout.debug_check_count - 1];
  runtime[last.position] ^= 8;
  verified = VerifyDebugOffsets(layout, runtime.data());
  EXPECT_FALSE(verified.ok());
  EXPECT_NE(verified.message().find(last.name), std::string::npos)
      << verified.message();
}

TEST(VersionSupportTest, LayoutsWithoutDebugOffsetsNeedNoCheck) {
  if (LayoutFor(12) == nullptr) GTEST_SKIP() << "no layout here";
  const unsigned char zeros[64] = {};
  EXPECT_TRUE(VerifyDebugOffsets(*LayoutFor(12), zeros).ok());
}

// The architectures with generated layouts (generate_layouts.py --arch).
#if defined(__x86_64__) || defined(__aarch64__)
TEST(VersionSupportTest, HasALayoutForEverySupportedMinor) {
  for (int minor = kFirstSupportedMinor; minor <= kLastSupportedMinor;
       ++minor) {
    const StatusOr<const FrameLayout*> found = FindLayout({3, minor, 0});
    ASSERT_TRUE(found.ok())
        << "3." << minor << ": " << found.status().message();
    const FrameLayout* layout = *found;
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
