// Unwinding through code without frame pointers (the usual case for
// aarch64 distribution and wheel builds); runs under qemu-user in the
// aarch64 cross test too (scripts/test-aarch64.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/native/module_map.h"
#include "runtime/native/native_stack.h"
#include "runtime/native/symbolizer.h"
#include "tests/unit/runtime/native/no_frame_pointer_chain.h"
#include "tests/unit/runtime/native/unwinder_params.h"

namespace deepcontext::native {
namespace {

std::vector<std::string> Names(const uintptr_t* pcs, int count) {
  Symbolizer symbolizer(ModuleMap::Snapshot());
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    names.push_back(symbolizer.Symbolize(pcs[i]).DisplayName());
  }
  return names;
}

int Find(const std::vector<std::string>& names, const char* name) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].find(name) != std::string::npos) return static_cast<int>(i);
  }
  return -1;
}

std::string Describe(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += "  " + name + "\n";
  return out;
}

class NoFramePointerTest : public ::testing::TestWithParam<UnwinderKind> {};

// The DWARF-based unwinders read .eh_frame, so frames without a frame
// record are found like any other, innermost last and in call order.
TEST_P(NoFramePointerTest, DwarfUnwindersSeeEveryLink) {
  const Unwinder unwinder(GetParam());
  uintptr_t pcs[kMaxNativeDepth];
  const int n = native_chain::NoFpA(unwinder, pcs, kMaxNativeDepth);
  ASSERT_GE(n, 3);
  const std::vector<std::string> names = Names(pcs, n);
  const int a = Find(names, "native_chain::NoFpA");
  const int b = Find(names, "native_chain::NoFpB");
  const int c = Find(names, "native_chain::NoFpC");
  EXPECT_EQ(c, n - 1) << Describe(names);
  EXPECT_EQ(b, c - 1) << Describe(names);
  EXPECT_EQ(a, b - 1) << Describe(names);
  // The walk goes on past the chain, out to GoogleTest's frames and main.
  EXPECT_NE(Find(names, "testing::Test::Run"), -1) << Describe(names);
  EXPECT_NE(std::find(names.begin(), names.end(), "main"), names.end())
      << Describe(names);
}

INSTANTIATE_TEST_SUITE_P(
    Available, NoFramePointerTest,
    ::testing::ValuesIn(testing::AvailableUnwinders(
        {UnwinderKind::kLibunwind, UnwinderKind::kGlibcBacktrace, UnwinderKind::kCfiCache})),
    testing::UnwinderParamName);

// The frame-pointer walker cannot know that these frames have no record;
// what it must guarantee is to stay inside the stack, end, and hand back
// only plausible return addresses, whatever the frames hold.
TEST(NoFramePointerWalkTest, StaysBoundedOnFramesWithoutRecords) {
  const Unwinder unwinder(UnwinderKind::kFramePointer);
  for (int max : {1, 4, kMaxNativeDepth}) {
    std::vector<uintptr_t> pcs(max + 1, ~uintptr_t{0});
    const int n = native_chain::NoFpA(unwinder, pcs.data(), max);
    ASSERT_GE(n, 0);
    ASSERT_LE(n, max);
    for (int i = 0; i < n; ++i) EXPECT_NE(pcs[i], 0u) << i;
    EXPECT_EQ(pcs[max], ~uintptr_t{0}) << "wrote past max";
  }
}

// The process default must not be the frame-pointer walker: on aarch64 it
// would drop every frame of code built without frame records.
TEST(NoFramePointerWalkTest, DefaultUnwinderReadsDwarf) {
  EXPECT_NE(Unwinder::Default().kind(), UnwinderKind::kFramePointer);
}

}  // namespace
}  // namespace deepcontext::native
