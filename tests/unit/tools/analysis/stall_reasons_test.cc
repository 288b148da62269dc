#include "tools/analysis/stall_reasons.h"

#include <gtest/gtest.h>

#include "tests/unit/tools/analysis/stall_profile.h"

namespace deepcontext::analysis {
namespace {

TEST(HottestInstructions, MostSamplesFirstWithTheirOwnReasons) {
  const ProfileTree tree = ProfileTree::FromProfile(testing::MakeStallProfile());
  const std::vector<InstructionStalls> hottest = HottestInstructions(tree, 3);
  ASSERT_EQ(hottest.size(), 3u);
  EXPECT_EQ(hottest[0].samples, 600);
  EXPECT_EQ(hottest[2].samples, 400);
  EXPECT_EQ(tree.frame_of(hottest[2].instruction).name, "pc 0x0110");
  EXPECT_EQ(tree.frame_of(hottest[2].kernel).name, "fma_kernel");
  EXPECT_DOUBLE_EQ(hottest[2].kernel_share, 0.4);
  ASSERT_EQ(hottest[2].reasons.size(), 3u);
  EXPECT_EQ(hottest[2].reasons[0].reason, "math_pipe_throttle");
  EXPECT_DOUBLE_EQ(hottest[2].reasons[0].share, 220.0 / 400.0);
}

TEST(HottestInstructions, OnlyTheKernelsKept) {
  const ProfileTree tree = ProfileTree::FromProfile(testing::MakeStallProfile());
  const std::vector<InstructionStalls> hottest =
      HottestInstructions(tree, 10, [&](NodeIndex kernel) {
        return tree.frame_of(kernel).name == "tiny_kernel";
      });
  ASSERT_EQ(hottest.size(), 1u);
  EXPECT_EQ(tree.frame_of(hottest[0].instruction).name, "pc 0x0010");
  EXPECT_DOUBLE_EQ(hottest[0].kernel_share, 1.0);
  EXPECT_TRUE(HottestInstructions(tree, 0).empty());
}

}  // namespace
}  // namespace deepcontext::analysis
