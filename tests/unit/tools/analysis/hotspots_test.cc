#include "tools/analysis/hotspots.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::analysis {
namespace {

using format::FrameKind;
using testing::kMs;
using testing::MakeTrainingProfile;
using testing::ProfileBuilder;

TEST(HotspotsTest, TopFramesByExclusiveValueWithTheirPythonCaller) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile());
  MetricIndex cpu = *tree.FindMetric("cpu_time");
  std::vector<Hotspot> spots = Hotspots(tree, cpu, 3, tree.FindMetric("calls"));
  ASSERT_EQ(spots.size(), 3u);

  EXPECT_EQ(tree.frames()[spots[0].frame].name, "aten::convolution");
  EXPECT_DOUBLE_EQ(spots[0].exclusive, 50 * kMs);
  EXPECT_DOUBLE_EQ(spots[0].calls, 10);
  ASSERT_NE(spots[0].python_caller, kNoFrame);
  const Frame& caller = tree.frames()[spots[0].python_caller];
  EXPECT_EQ(caller.name, "forward");
  EXPECT_EQ(caller.line, 10u);
  EXPECT_DOUBLE_EQ(spots[0].python_caller_value, 50 * kMs);

  // Summed over both threads; only 30 ms of it has a Python caller.
  EXPECT_EQ(tree.frames()[spots[1].frame].name, "aten::convolution_backward");
  EXPECT_DOUBLE_EQ(spots[1].exclusive, 34 * kMs);
  EXPECT_DOUBLE_EQ(spots[1].python_caller_value, 30 * kMs);

  EXPECT_EQ(tree.frames()[spots[2].frame].name, "ConvolutionBackward0");
}

TEST(HotspotsTest, CallersLookThroughWrappersAndCompilerFrames) {
  // A copy Dynamo's tracing made: the caller is the user's line, not the
  // fake-tensor frame it ran under; a kernel launched from Inductor's
  // generated code keeps that line.
  const std::string torch = "/venv/lib/python3.12/site-packages/torch/";
  ProfileBuilder b;
  b.Metric("gpu_time");
  auto line = b.Add(0, FrameKind::kPythonFrame, "main", "/p/train.py", 32);
  auto wrapper = b.Add(line, FrameKind::kPythonFrame, "Module._call_impl",
                       torch + "nn/modules/module.py", 1790);
  auto fake = b.Add(wrapper, FrameKind::kPythonFrame, "FakeTensorMode.dispatch",
                    torch + "_subclasses/fake_tensor.py", 2207);
  b.Value(b.Add(fake, FrameKind::kGpuKernel, "memcpy DtoD"), "gpu_time", 2);
  auto call = b.Add(fake, FrameKind::kPythonFrame, "Runner.call",
                    "/tmp/torchinductor_u/ab/cab.py", 88);
  b.Value(b.Add(call, FrameKind::kGpuKernel, "triton_poi_fused_0"), "gpu_time", 3);
  ProfileTree tree = ProfileTree::FromProfile(b.profile());
  std::vector<Hotspot> spots = Hotspots(tree, 0, 2, std::nullopt);
  ASSERT_EQ(spots.size(), 2u);
  EXPECT_EQ(tree.frames()[spots[0].frame].name, "triton_poi_fused_0");
  EXPECT_EQ(tree.frames()[spots[0].python_caller].name, "Runner.call");
  EXPECT_EQ(tree.frames()[spots[1].frame].name, "memcpy DtoD");
  ASSERT_NE(spots[1].python_caller, kNoFrame);
  EXPECT_EQ(tree.frames()[spots[1].python_caller].name, "main");
}

TEST(HotspotsTest, StructuralNodesAreNeverHotspots) {
  ProfileBuilder b;
  format::NodeId thread = b.Add(0, FrameKind::kThread, "main");
  format::NodeId phase = b.Add(thread, FrameKind::kPhase, "forward");
  format::NodeId py = b.Add(thread, FrameKind::kPythonFrame, "step", "t.py", 3);
  format::NodeId kernel = b.Add(py, FrameKind::kGpuKernel, "gemm");
  b.Value(thread, "cpu_time", 1000);
  b.Value(phase, "cpu_time", 500);
  b.Value(py, "cpu_time", 10);
  b.Value(kernel, "cpu_time", 20);
  ProfileTree tree = ProfileTree::FromProfile(b.profile());
  std::vector<Hotspot> spots = Hotspots(tree, 0, 10);
  ASSERT_EQ(spots.size(), 2u);
  EXPECT_EQ(tree.frames()[spots[0].frame].name, "gemm");
  EXPECT_EQ(tree.frames()[spots[0].python_caller].name, "step");
  EXPECT_EQ(tree.frames()[spots[1].frame].name, "step");
  // Python frames are the caller themselves.
  EXPECT_EQ(spots[1].python_caller, kNoFrame);
}

TEST(HotspotsTest, NothingWithoutValues) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile());
  MetricIndex calls = *tree.FindMetric("calls");
  EXPECT_EQ(Hotspots(tree, calls, 0).size(), 0u);
  ProfileBuilder b;
  b.Add(0, FrameKind::kOperator, "idle");
  b.Metric("cpu_time");
  ProfileTree empty = ProfileTree::FromProfile(b.profile());
  EXPECT_TRUE(Hotspots(empty, 0, 5).empty());
}

}  // namespace
}  // namespace deepcontext::analysis
