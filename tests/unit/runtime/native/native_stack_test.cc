#include "runtime/native/native_stack.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/native/module_map.h"
#include "runtime/native/symbolizer.h"
#include "tests/unit/runtime/native/call_chain.h"
#include "tests/unit/runtime/native/unwinder_params.h"

namespace deepcontext::native {
namespace {

using native_chain::CaptureRequest;

// Position of the first frame whose function name contains `name`, or -1.
int FindFrame(const std::vector<std::string>& names, const std::string& name) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].find(name) != std::string::npos) return static_cast<int>(i);
  }
  return -1;
}

std::vector<std::string> Names(const uintptr_t* pcs, int count) {
  Symbolizer symbolizer(ModuleMap::Snapshot());
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    names.push_back(symbolizer.Symbolize(pcs[i]).DisplayName());
  }
  return names;
}

std::string Describe(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += "  " + name + "\n";
  return out;
}

class UnwinderTest : public ::testing::TestWithParam<UnwinderKind> {};

TEST_P(UnwinderTest, ChainAppearsInOrderWithCallerInnermost) {
  ASSERT_TRUE(UnwinderAvailable(GetParam()));
  const Unwinder unwinder(GetParam());
  ASSERT_EQ(unwinder.kind(), GetParam());
  uintptr_t pcs[kMaxNativeDepth];
  const int n = native_chain::ChainA(CaptureRequest{&unwinder, 0}, pcs,
                                     kMaxNativeDepth);
  ASSERT_GE(n, 3);
  const std::vector<std::string> names = Names(pcs, n);
  const int a = FindFrame(names, "native_chain::ChainA");
  const int b = FindFrame(names, "native_chain::ChainB");
  const int c = FindFrame(names, "native_chain::ChainC");
  EXPECT_EQ(c, n - 1) << Describe(names);  // ChainC called Capture
  EXPECT_EQ(b, c - 1) << Describe(names);
  EXPECT_EQ(a, b - 1) << Describe(names);
  // Nothing of the capture machinery itself is reported.
  for (const char* internal :
       {"Unwinder::Capture", "CaptureFrom", "UnwindRaw", "WalkFramePointers",
        "unw_backtrace", "backtrace"}) {
    EXPECT_EQ(FindFrame(names, internal), -1) << internal << Describe(names);
  }
}

TEST_P(UnwinderTest, SkipDropsInnermostFrames) {
  const Unwinder unwinder(GetParam());
  uintptr_t full[kMaxNativeDepth];
  uintptr_t skipped[kMaxNativeDepth];
  const int n = native_chain::ChainA(CaptureRequest{&unwinder, 0}, full,
                                     kMaxNativeDepth);
  const int m = native_chain::ChainA(CaptureRequest{&unwinder, 2}, skipped,
                                     kMaxNativeDepth);
  ASSERT_GE(n, 3);
  ASSERT_GE(m, 1);
  const std::vector<std::string> names = Names(skipped, m);
  EXPECT_EQ(FindFrame(names, "native_chain::ChainC"), -1) << Describe(names);
  EXPECT_EQ(FindFrame(names, "native_chain::ChainB"), -1) << Describe(names);
  // ChainA is the innermost frame left (searched by position: beyond the
  // test's own frames the frame-pointer walk may name garbage, which can
  // resolve to any nearby symbol).
  EXPECT_NE(names[m - 1].find("native_chain::ChainA"), std::string::npos)
      << Describe(names);
  EXPECT_EQ(skipped[m - 1], full[n - 3]);
  // Beyond the test's own frames (built without frame pointers) the
  // frame-pointer walk depends on leftover register contents.
  if (GetParam() == UnwinderKind::kFramePointer) return;
  ASSERT_EQ(m, n - 2);
  // The outer frames are the same return addresses, except in the test
  // body, which called ChainA from two places.
  for (int i = 0; i < m; ++i) {
    if (i != m - 2) {
      EXPECT_EQ(skipped[i], full[i]) << i;
    }
  }
}

TEST_P(UnwinderTest, DeepStackKeepsInnermostFrames) {
  const Unwinder unwinder(GetParam());
  uintptr_t pcs[8];
  const int n = native_chain::CaptureAtDepth(unwinder, 20, pcs, 8);
  ASSERT_EQ(n, 8);
  const std::vector<std::string> names = Names(pcs, n);
  for (const std::string& name : names) {
    EXPECT_NE(name.find("native_chain::CaptureAtDepth"), std::string::npos)
        << Describe(names);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Available, UnwinderTest,
    ::testing::ValuesIn(testing::AvailableUnwinders(
        {UnwinderKind::kLibunwind, UnwinderKind::kGlibcBacktrace, UnwinderKind::kFramePointer,
         UnwinderKind::kCfiCache})),
    testing::UnwinderParamName);

TEST(NativeStackTest, DefaultCaptureNamesCallerChain) {
  uintptr_t pcs[kMaxNativeDepth];
  const int n = native_chain::ChainA(CaptureRequest{nullptr, 0}, pcs,
                                     kMaxNativeDepth);
  const std::vector<std::string> names = Names(pcs, n);
  ASSERT_GE(n, 3);
  EXPECT_EQ(FindFrame(names, "native_chain::ChainC"), n - 1)
      << Describe(names);
  EXPECT_EQ(FindFrame(names, "native_chain::ChainA"), n - 3)
      << Describe(names);
}

// Cached rules first, even with libunwind installed: only they stop at the
// previous capture's frames. libunwind where they are not supported.
TEST(NativeStackTest, DefaultIsCfiCacheWhereSupportedThenLibunwind) {
  if (UnwinderAvailable(UnwinderKind::kCfiCache)) {
    EXPECT_EQ(Unwinder::Default().kind(), UnwinderKind::kCfiCache);
    EXPECT_STREQ(Unwinder::Default().Name(), "cfi-cache");
    return;
  }
#if defined(DEEPCONTEXT_HAVE_LIBUNWIND)
  EXPECT_EQ(Unwinder::Default().kind(), UnwinderKind::kLibunwind);
  EXPECT_STREQ(Unwinder::Default().Name(), "libunwind");
#else
  EXPECT_NE(Unwinder::Default().kind(), UnwinderKind::kFramePointer);
#endif
}

TEST(NativeStackTest, NamesRoundTrip) {
  for (UnwinderKind kind :
       {UnwinderKind::kLibunwind, UnwinderKind::kGlibcBacktrace,
        UnwinderKind::kFramePointer, UnwinderKind::kCfiCache}) {
    UnwinderKind parsed = UnwinderKind::kLibunwind;
    ASSERT_TRUE(ParseUnwinderKind(UnwinderKindName(kind), &parsed));
    EXPECT_EQ(parsed, kind);
  }
  UnwinderKind unused;
  EXPECT_FALSE(ParseUnwinderKind("dwarf", &unused));
}

TEST(NativeStackTest, RejectsBadArguments) {
  uintptr_t pcs[4];
  EXPECT_EQ(CaptureNativeStack(nullptr, 4, 0), 0);
  EXPECT_EQ(CaptureNativeStack(pcs, 0, 0), 0);
  EXPECT_EQ(CaptureNativeStack(pcs, 4, 100000), 0);
}

}  // namespace
}  // namespace deepcontext::native
