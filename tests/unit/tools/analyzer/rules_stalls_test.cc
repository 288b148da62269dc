#include <gtest/gtest.h>

#include <string>

#include "tests/unit/tools/analysis/stall_profile.h"
#include "tests/unit/tools/analysis/test_profiles.h"
#include "tools/analyzer/analyzer.h"
#include "tools/analyzer/findings_text.h"

namespace deepcontext::analyzer {
namespace {

using analysis::ProfileTree;

TEST(GpuStallsRule, NamesTheDominantStallOfEachHotKernel) {
  ProfileTree tree = ProfileTree::FromProfile(analysis::testing::MakeStallProfile());
  Analysis analysis = Analyze(tree, {}, {"gpu_stalls"});
  ASSERT_EQ(analysis.findings.size(), 2u);
  // Ranked by benefit: 400 ms x 70 % before 300 ms x 55 %.
  const Finding& memory = analysis.findings[0];
  EXPECT_EQ(memory.context.kernel, "copy_kernel");
  EXPECT_EQ(memory.context.line, 20u);
  EXPECT_EQ(memory.title,
            "memory-bound: warps wait for global memory (long_scoreboard in 70.0% "
            "of 1000 samples)");
  EXPECT_DOUBLE_EQ(memory.benefit.high_ns, 400e6 * 0.7);
  EXPECT_NE(memory.suggestion.find("long_scoreboard means waiting for global/local memory"),
            std::string::npos)
      << memory.suggestion;
  const Finding& compute = analysis.findings[1];
  EXPECT_EQ(compute.context.kernel, "fma_kernel");
  EXPECT_EQ(compute.context.line, 30u);
  EXPECT_TRUE(compute.title.starts_with("compute-bound: one math pipe is saturated "
                                        "(math_pipe_throttle in 55.0%"))
      << compute.title;
}

TEST(GpuStallsRule, SkipsWithoutSamplesAndSaysHowToGetThem) {
  ProfileTree tree = ProfileTree::FromProfile(analysis::testing::MakeTrainingProfile());
  Analysis analysis = Analyze(tree, {}, {"gpu_stalls"});
  EXPECT_TRUE(analysis.findings.empty());
  ASSERT_EQ(analysis.skipped.size(), 1u);
  EXPECT_NE(analysis.skipped[0].reason.find("--gpu-samples"), std::string::npos);
}

}  // namespace
}  // namespace deepcontext::analyzer
