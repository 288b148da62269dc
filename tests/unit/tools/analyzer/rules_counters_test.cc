#include <gtest/gtest.h>

#include <string>

#include "tests/unit/tools/analysis/counter_profile.h"
#include "tests/unit/tools/analysis/test_profiles.h"
#include "tools/analysis/kernel_counters.h"
#include "tools/analyzer/analyzer.h"

namespace deepcontext::analyzer {
namespace {

using analysis::ProfileTree;

TEST(KernelCounters, MeansPerKernelMostGpuTimeFirst) {
  ProfileTree tree = ProfileTree::FromProfile(analysis::testing::MakeCounterProfile());
  ASSERT_TRUE(analysis::HasKernelCounters(tree));
  const auto kernels = analysis::MeasuredKernels(tree);
  ASSERT_EQ(kernels.size(), 6u);
  EXPECT_EQ(tree.frame_of(kernels[0].kernel).name, "copy_kernel");
  EXPECT_EQ(kernels[0].launches, 5u);
  EXPECT_EQ(kernels[0].timed_launches, 95u);
  EXPECT_EQ(kernels[0].untimed_launches, 5u);
  EXPECT_DOUBLE_EQ(kernels[0].gpu_time, 300e6);
  EXPECT_DOUBLE_EQ(*kernels[0].dram_pct, 88);
  EXPECT_DOUBLE_EQ(*kernels[0].occupancy, 0.82);
  EXPECT_FALSE(kernels[4].tensor_pipe_pct.has_value());  // tiny_kernel: not measured
  // Its only launch was measured: counters, but no GPU time; last.
  EXPECT_EQ(tree.frame_of(kernels[5].kernel).name, "normal_kernel");
  EXPECT_EQ(kernels[5].launches, 1u);
  EXPECT_EQ(kernels[5].timed_launches, 0u);
  EXPECT_EQ(kernels[5].untimed_launches, 1u);
  EXPECT_DOUBLE_EQ(kernels[5].gpu_time, 0);
  EXPECT_DOUBLE_EQ(*kernels[5].sm_pct, 73);
}

TEST(GpuCountersRule, FlagsTheGatherAtLowBandwidthAndTheIdleTensorPipe) {
  ProfileTree tree = ProfileTree::FromProfile(analysis::testing::MakeCounterProfile());
  Analysis analysis = Analyze(tree, {}, {"gpu_counters"});
  ASSERT_EQ(analysis.findings.size(), 2u);
  // Ranked by benefit: 250 ms x (1 - 18/80) before 200 ms x (1 - 12/70).
  const Finding& gather = analysis.findings[0];
  EXPECT_EQ(gather.context.kernel, "gather_kernel");
  EXPECT_EQ(gather.context.line, 25u);
  EXPECT_EQ(gather.title,
            "memory-bound kernel at low DRAM throughput (DRAM 18.0% of peak, SM 9.0%): a "
            "poor access pattern");
  EXPECT_DOUBLE_EQ(gather.benefit.high_ns, 250e6 * (1 - 18.0 / 80));
  const Finding& gemm = analysis.findings[1];
  EXPECT_EQ(gemm.context.line, 30u);
  EXPECT_TRUE(gemm.title.starts_with("GEMM with the tensor pipe mostly idle (tensor pipe "
                                     "active 12.0% of cycles"))
      << gemm.title;
  EXPECT_DOUBLE_EQ(gemm.benefit.high_ns, 200e6 * (1 - 12.0 / 70));
  // Neither the streaming copy (88 % DRAM), the FMA kernel (92 % SM) nor
  // the 1 ms kernel are findings.
  for (const Finding& f : analysis.findings) {
    EXPECT_NE(f.context.kernel, "copy_kernel");
    EXPECT_NE(f.context.kernel, "fma_kernel");
    EXPECT_NE(f.context.kernel, "tiny_kernel");
  }
}

format::Profile WithTensorCounterOnly(format::Profile profile, const char* capability) {
  for (auto& [key, value] : profile.metadata) {
    if (key == "gpu_metrics") {
      value = "on (auto range, kernel replay, 11 passes per kernel, 1 context, chip GH100; "
              "metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active)";
    }
    if (key == "gpu0_compute_capability") value = capability;
  }
  return profile;
}

TEST(GpuCountersRule, OnHopperTheHmmaCounterJudgesGemms) {
  // wgmma runs on the pipe the hmma counter measures.
  ProfileTree tree = ProfileTree::FromProfile(
      WithTensorCounterOnly(analysis::testing::MakeCounterProfile(), "9.0"));
  Analysis analysis = Analyze(tree, {}, {"gpu_counters"});
  ASSERT_EQ(analysis.findings.size(), 2u);
  EXPECT_EQ(analysis.findings[1].context.line, 30u);
}

TEST(GpuCountersRule, OnBlackwellWithoutATensorCoreUnitCounterGemmsAreNotJudged) {
  ProfileTree tree = ProfileTree::FromProfile(
      WithTensorCounterOnly(analysis::testing::MakeCounterProfile(), "10.0"));
  Analysis analysis = Analyze(tree, {}, {"gpu_counters"});
  ASSERT_EQ(analysis.findings.size(), 1u);
  EXPECT_EQ(analysis.findings[0].context.kernel, "gather_kernel");
}

TEST(GpuCountersRule, SkipsWithoutCountersAndSaysHowToGetThem) {
  ProfileTree tree = ProfileTree::FromProfile(analysis::testing::MakeTrainingProfile());
  Analysis analysis = Analyze(tree, {}, {"gpu_counters"});
  EXPECT_TRUE(analysis.findings.empty());
  ASSERT_EQ(analysis.skipped.size(), 1u);
  EXPECT_NE(analysis.skipped[0].reason.find("--gpu-metrics"), std::string::npos);
}

}  // namespace
}  // namespace deepcontext::analyzer
