// memory_peak (tools/analyzer/rules_memory.cc): the lines holding the
// device memory peak, with severity by how full the device got.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/tools/analysis/test_profiles.h"
#include "tests/unit/tools/analyzer/gpu_profiles.h"
#include "tools/analyzer/analyzer.h"

namespace deepcontext::analyzer {
namespace {

using analysis::ProfileTree;
using analysis::testing::ProfileBuilder;
using format::FrameKind;
using testing::MakeGpuProfile;

std::vector<Finding> FindingsOf(const format::Profile& profile, const std::string& rule) {
  ProfileTree tree = ProfileTree::FromProfile(profile);
  return Analyze(tree, {}, {rule}).findings;
}

// Device memory live at the peak (10 GB): 6 GB of activations saved in the
// forward pass of line 90, 2.5 GB of optimizer state from line 91, 0.5 GB
// from line 92, 1 GB outside any Python line.
format::Profile MemoryProfile(const char* reserved_peak = nullptr,
                              const char* device_total = nullptr) {
  ProfileBuilder b;
  b.Metric("gpu_peak_live_bytes", "bytes");
  b.Metric("wall_time", "ns");
  b.Meta("start_time_ns", "0");
  b.Meta("end_time_ns", "1000000000");
  if (reserved_peak != nullptr) b.Meta("gpu0_memory_reserved_peak_bytes", reserved_peak);
  if (device_total != nullptr) b.Meta("gpu0_memory_total_bytes", device_total);
  const std::string file = "/w/train.py";
  auto thread = b.Add(0, FrameKind::kThread, "main thread");
  auto forward_line = b.Add(thread, FrameKind::kPythonFrame, "main", file, 90);
  auto phase = b.Add(forward_line, FrameKind::kPhase, "[forward]");
  auto linear = b.Add(phase, FrameKind::kOperator, "aten::linear");
  b.Value(linear, "gpu_peak_live_bytes", 6e9);
  auto step_line = b.Add(thread, FrameKind::kPythonFrame, "main", file, 91);
  auto adam = b.Add(step_line, FrameKind::kPythonFrame, "_init_group",
                    "/usr/lib/python3/dist-packages/torch/optim/adam.py", 90);
  auto zeros = b.Add(adam, FrameKind::kOperator, "aten::zeros_like");
  b.Value(zeros, "gpu_peak_live_bytes", 2.5e9);
  auto small_line = b.Add(thread, FrameKind::kPythonFrame, "main", file, 92);
  auto small = b.Add(small_line, FrameKind::kOperator, "aten::empty");
  b.Value(small, "gpu_peak_live_bytes", 0.5e9);
  auto other = b.Add(thread, FrameKind::kOperator, "aten::empty");
  b.Value(other, "gpu_peak_live_bytes", 1e9);
  return b.profile();
}

TEST(MemoryPeak, NamesTheLinesHoldingThePeakWithAdviceByKind) {
  // 11 GB reserved of a 12 GB device: the next batch size may not fit.
  auto findings = FindingsOf(MemoryProfile("11000000000", "12000000000"), "memory_peak");
  ASSERT_EQ(findings.size(), 3u);  // 90, 91 and the 1 GB without a line
  EXPECT_EQ(findings[0].context.line, 90u);
  EXPECT_EQ(findings[0].severity, Severity::kHigh);
  EXPECT_DOUBLE_EQ(findings[0].benefit.bytes, 6e9);
  EXPECT_DOUBLE_EQ(findings[0].benefit.peak_bytes, 10e9);
  EXPECT_NE(findings[0].suggestion.find("checkpointing"), std::string::npos);
  EXPECT_EQ(findings[1].context.line, 91u);
  EXPECT_EQ(findings[1].severity, Severity::kMedium);
  EXPECT_NE(findings[1].suggestion.find("Optimizer state"), std::string::npos);
  EXPECT_EQ(findings[2].context.op, "aten::empty");
}

// The same holders on a device with room to spare are no alarm; with the
// device's size unknown, no finding is high.
TEST(MemoryPeak, SeverityFollowsHowFullTheDeviceIs) {
  auto roomy = FindingsOf(MemoryProfile("11000000000", "141000000000"), "memory_peak");
  ASSERT_EQ(roomy.size(), 3u);
  for (const auto& f : roomy) EXPECT_EQ(f.severity, Severity::kLow);
  auto half = FindingsOf(MemoryProfile("8000000000", "12000000000"), "memory_peak");
  ASSERT_EQ(half.size(), 3u);
  for (const auto& f : half) EXPECT_EQ(f.severity, Severity::kMedium);
  auto unknown = FindingsOf(MemoryProfile(), "memory_peak");
  ASSERT_EQ(unknown.size(), 3u);
  EXPECT_EQ(unknown[0].severity, Severity::kMedium);
  EXPECT_EQ(unknown[1].severity, Severity::kLow);
}

TEST(MemoryPeak, SkippedWithoutMemoryTracking) {
  ProfileTree tree = ProfileTree::FromProfile(MakeGpuProfile({}));
  Analysis analysis = Analyze(tree, {}, {"memory_peak"});
  ASSERT_EQ(analysis.skipped.size(), 1u);
  EXPECT_EQ(analysis.skipped[0].reason,
            "no device memory tracked (gpu_peak_live_bytes)");
}

}  // namespace
}  // namespace deepcontext::analyzer
