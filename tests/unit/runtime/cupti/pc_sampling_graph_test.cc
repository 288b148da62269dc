// Samples of CUDA graph kernels: every kernel of a graph launch carries the
// launch's correlation id, and each sample is placed on the line that
// captured its kernel, as the kernel's activity records are; a kernel name
// captured on two lines of the graph stays under the launch and is counted.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "runtime/cupti/graph_kernel_sites.h"
#include "runtime/cupti/pc_sampling_aggregator.h"
#include "tests/unit/runtime/cupti/sampling_sink.h"

namespace deepcontext::cupti {
namespace {

using fake::SamplingSink;

// Calling contexts owned by the test: three Python lines.
constexpr gpu::ContextId kMatmulLine = 5;   // captured the GEMM
constexpr gpu::ContextId kReluLine = 6;     // captured the activation
constexpr gpu::ContextId kReplayLine = 7;   // graph.replay()
constexpr uint64_t kGraph = 0xa000;
constexpr uint64_t kExec = 0xb000;
constexpr uint32_t kReplay = 40;  // the cuGraphLaunch's correlation id
constexpr uint32_t kLongScoreboard = 2;

class PcSamplingGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<std::pair<uint32_t, std::string>> reasons = {
        {kLongScoreboard, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"}};
    aggregator_.SetStallReasons(reasons);
  }

  // `samples` long-scoreboard samples at `offset` of `kernel`, run by the
  // launch `correlation_id`.
  void Sample(uint32_t correlation_id, std::string_view kernel, uint64_t offset,
              uint32_t samples) {
    const StallSamples stalls[] = {{kLongScoreboard, samples}};
    aggregator_.OnPc(PcRecord{correlation_id, kernel, 1, offset, stalls});
  }

  // Samples at the instruction `pc` of `kernel` below `context` -> `api`.
  double At(gpu::ContextId context, const std::string& api, const std::string& kernel,
            const std::string& pc) const {
    const gpu::ContextId node = sink_.Find(context, {api, kernel, pc});
    return node == 0 ? 0 : sink_.Named(node, "gpu_samples");
  }

  std::map<std::string, std::string> Metadata() const {
    const auto pairs = PcSamplingMetadata(aggregator_.Stats(), "on");
    return {pairs.begin(), pairs.end()};
  }

  SamplingSink sink_;
  PcSampleAggregator aggregator_{sink_};
  GraphKernelSites sites_;
};

TEST_F(PcSamplingGraphTest, EachKernelsSamplesLandOnTheLineThatCapturedIt) {
  // torch.cuda.graph(g): two lines, one kernel each, captured by stream.
  sites_.OnKernelCaptured(kGraph, "_Z4gemmPf", kMatmulLine, "cuLaunchKernel");
  sites_.OnKernelCaptured(kGraph, "_Z4reluPf", kReluLine, "cuLaunchKernel");
  sites_.OnExecCreated(kExec, kGraph);
  // g.replay()
  aggregator_.OnGraphLaunch(kReplay, kReplayLine, "cuGraphLaunch", sites_.ForLaunch(kExec));
  Sample(kReplay, "_Z4gemmPf", 0x80, 30);
  Sample(kReplay, "_Z4reluPf", 0x40, 12);
  Sample(kReplay, "_Z4gemmPf", 0x80, 5);

  EXPECT_EQ(At(kMatmulLine, "cuLaunchKernel", "_Z4gemmPf", "pc 0x0080"), 35);
  EXPECT_EQ(At(kReluLine, "cuLaunchKernel", "_Z4reluPf", "pc 0x0040"), 12);
  // Nothing under the replay line: it only triggered the work.
  EXPECT_EQ(sink_.Find(kReplayLine, {"cuGraphLaunch"}), 0u);
  EXPECT_EQ(sink_.Find(kMatmulLine, {"cuLaunchKernel", "_Z4reluPf"}), 0u);
  const PcSamplingStats stats = aggregator_.Stats();
  EXPECT_EQ(stats.samples, 47u);
  EXPECT_EQ(stats.graph_samples_at_capture, 47u);
  EXPECT_EQ(stats.graph_samples_at_launch, 0u);
  auto keys = Metadata();
  EXPECT_EQ(keys["gpu_samples_graph_at_capture"], "47");
  EXPECT_EQ(keys.count("gpu_samples_graph_at_launch"), 0u);
}

TEST_F(PcSamplingGraphTest, ANameCapturedOnTwoLinesStaysUnderTheLaunchAndIsCounted) {
  sites_.OnKernelCaptured(kGraph, "_Z3addPf", kMatmulLine, "cuLaunchKernel");
  sites_.OnKernelCaptured(kGraph, "_Z3addPf", kReluLine, "cuLaunchKernel");
  sites_.OnKernelCaptured(kGraph, "_Z4reluPf", kReluLine, "cuLaunchKernel");
  sites_.OnExecCreated(kExec, kGraph);
  aggregator_.OnGraphLaunch(kReplay, kReplayLine, "cuGraphLaunch", sites_.ForLaunch(kExec));
  Sample(kReplay, "_Z3addPf", 0x10, 9);
  Sample(kReplay, "_Z4reluPf", 0x40, 4);

  EXPECT_EQ(At(kReplayLine, "cuGraphLaunch", "_Z3addPf", "pc 0x0010"), 9);
  EXPECT_EQ(sink_.Find(kMatmulLine, {"cuLaunchKernel", "_Z3addPf"}), 0u);
  EXPECT_EQ(sink_.Find(kReluLine, {"cuLaunchKernel", "_Z3addPf"}), 0u);
  EXPECT_EQ(At(kReluLine, "cuLaunchKernel", "_Z4reluPf", "pc 0x0040"), 4);
  auto keys = Metadata();
  EXPECT_EQ(keys["gpu_samples_graph_at_launch"], "9");
  EXPECT_EQ(keys["gpu_samples_graph_at_capture"], "4");
  EXPECT_EQ(keys["gpu_samples_attributed"], "13");
}

TEST_F(PcSamplingGraphTest, GraphsWithoutKnownCaptureSitesStayUnderTheLaunch) {
  // Instantiated before profiling started, or built node by node.
  aggregator_.OnGraphLaunch(kReplay, kReplayLine, "cuGraphLaunch", sites_.ForLaunch(kExec));
  Sample(kReplay, "_Z4gemmPf", 0x80, 6);
  // A kernel the graph's table does not name (e.g. of an embedded child graph).
  sites_.OnKernelCaptured(kGraph, "_Z4reluPf", kReluLine, "cuLaunchKernel");
  sites_.OnExecCreated(kExec, kGraph);
  aggregator_.OnGraphLaunch(kReplay + 1, kReplayLine, "cuGraphLaunch", sites_.ForLaunch(kExec));
  Sample(kReplay + 1, "_Z4gemmPf", 0x80, 2);

  EXPECT_EQ(At(kReplayLine, "cuGraphLaunch", "_Z4gemmPf", "pc 0x0080"), 8);
  EXPECT_EQ(aggregator_.Stats().graph_samples_at_launch, 8u);
  EXPECT_EQ(aggregator_.Stats().graph_samples_at_capture, 0u);
}

TEST_F(PcSamplingGraphTest, PlainLaunchesAreNotGraphSamples) {
  aggregator_.OnLaunch(3, kMatmulLine, "cuLaunchKernel");
  Sample(3, "_Z4gemmPf", 0x80, 7);
  EXPECT_EQ(At(kMatmulLine, "cuLaunchKernel", "_Z4gemmPf", "pc 0x0080"), 7);
  const PcSamplingStats stats = aggregator_.Stats();
  EXPECT_EQ(stats.samples, 7u);
  EXPECT_EQ(stats.graph_samples_at_capture + stats.graph_samples_at_launch, 0u);
}

}  // namespace
}  // namespace deepcontext::cupti
