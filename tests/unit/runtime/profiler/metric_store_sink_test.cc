#include "runtime/profiler/metric_store_sink.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "deepcontext/dlmonitor.h"
#include "runtime/gpu/gpu_attribution.h"

namespace deepcontext::profiler {
namespace {

class MetricStoreSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(dlmonitor_init(), DLMONITOR_OK);
    // A calling context owned by the "program": root -> a Python frame.
    dlmonitor_frame_t frame{};
    frame.struct_size = sizeof(frame);
    frame.kind = DLMONITOR_FRAME_PYTHON;
    frame.name = "train_step";
    frame.file = "train.py";
    frame.line = 42;
    ASSERT_EQ(dlmonitor_context_child(1, &frame, &launch_context_), DLMONITOR_OK);
  }
  void TearDown() override { dlmonitor_finalize(); }

  // Kind, name and parent of a context, from DLMonitor.
  struct Frame {
    int kind = -1;
    std::string name;
    gpu::ContextId parent = 0;
    std::string file;
    uint32_t line = 0;
  };
  static Frame FrameOf(gpu::ContextId context) {
    dlmonitor_frame_t frame{};
    frame.struct_size = sizeof(frame);
    dlmonitor_context_t parent = 0;
    Frame out;
    if (dlmonitor_context_frame(context, &frame, &parent) == DLMONITOR_OK) {
      out.kind = frame.kind;
      out.name = frame.name;
      out.parent = parent;
      out.file = frame.file != nullptr ? frame.file : "";
      out.line = frame.line;
    }
    return out;
  }

  // (context, metric name) -> accumulator of everything in the store.
  std::map<std::pair<gpu::ContextId, std::string>, Accumulator> Samples() const {
    const std::vector<MetricInfo> metrics = store_.Metrics();
    std::map<std::pair<gpu::ContextId, std::string>, Accumulator> out;
    store_.ForEach(dlmonitor_context_count() + 1,
                   [&](gpu::ContextId context, MetricId metric,
                       const Accumulator& accumulator) {
                     out[{context, metrics.at(metric).name}] = accumulator;
                   });
    return out;
  }

  MetricStore store_;
  dlmonitor_context_t launch_context_ = 0;
};

TEST_F(MetricStoreSinkTest, RegistersEveryGpuMetricOnce) {
  MetricStoreSink sink(store_);
  MetricStoreSink second(store_);
  const std::vector<MetricInfo> metrics = store_.Metrics();
  ASSERT_EQ(metrics.size(), static_cast<size_t>(gpu::GpuMetric::kCount));
  for (int i = 0; i < static_cast<int>(gpu::GpuMetric::kCount); ++i) {
    const auto metric = static_cast<gpu::GpuMetric>(i);
    const gpu::GpuMetricInfo& info = gpu::MetricInfo(metric);
    const MetricId id = sink.metric_id(metric);
    EXPECT_EQ(second.metric_id(metric), id);
    ASSERT_LT(id, metrics.size());
    EXPECT_EQ(metrics[id].name, info.name);
    EXPECT_EQ(metrics[id].unit, info.unit);
    EXPECT_EQ(metrics[id].description, info.description);
  }
}

TEST_F(MetricStoreSinkTest, ChildrenAreDlmonitorContextsWithGpuFrameKinds) {
  MetricStoreSink sink(store_);
  const gpu::ContextId api = sink.Child(launch_context_, gpu::GpuNodeKind::kApi, "cuLaunchKernel");
  ASSERT_NE(api, 0u);
  EXPECT_EQ(sink.Child(launch_context_, gpu::GpuNodeKind::kApi, "cuLaunchKernel"), api);
  const Frame api_frame = FrameOf(api);
  EXPECT_EQ(api_frame.kind, DLMONITOR_FRAME_GPU_API);
  EXPECT_EQ(api_frame.name, "cuLaunchKernel");
  EXPECT_EQ(api_frame.parent, launch_context_);

  const struct {
    gpu::GpuNodeKind kind;
    int frame_kind;
    std::string name;
  } cases[] = {
      {gpu::GpuNodeKind::kKernel, DLMONITOR_FRAME_GPU_KERNEL, "_Z4gemmPfS_"},
      {gpu::GpuNodeKind::kMemcpy, DLMONITOR_FRAME_GPU_MEMCPY, "memcpy HtoD (pageable)"},
      {gpu::GpuNodeKind::kMemset, DLMONITOR_FRAME_GPU_MEMSET, "memset"},
      {gpu::GpuNodeKind::kSync, DLMONITOR_FRAME_GPU_SYNC, "sync: stream"},
  };
  for (const auto& c : cases) {
    // Names are string_views: pass one that is not NUL-terminated.
    const std::string padded = c.name + "#tail";
    const gpu::ContextId child =
        sink.Child(api, c.kind, std::string_view(padded).substr(0, c.name.size()));
    ASSERT_NE(child, 0u) << c.name;
    const Frame frame = FrameOf(child);
    EXPECT_EQ(frame.kind, c.frame_kind) << c.name;
    EXPECT_EQ(frame.name, c.name);
    EXPECT_EQ(frame.parent, api);
  }
  // Same name, other kind: another node.
  EXPECT_NE(sink.Child(api, gpu::GpuNodeKind::kKernel, "memset"),
            sink.Child(api, gpu::GpuNodeKind::kMemset, "memset"));
  EXPECT_EQ(sink.Child(0, gpu::GpuNodeKind::kApi, "cuLaunchKernel"), 0u);
}

// XLA operations: source lines inside a jitted function keep their file
// and line; phases, scopes and operators take DLMonitor's kinds.
TEST_F(MetricStoreSinkTest, XlaNodesKeepTheirKindsAndSourceLines) {
  MetricStoreSink sink(store_);
  const gpu::ContextId phase = sink.Child(launch_context_, gpu::GpuNodeKind::kPhase, "[forward]");
  EXPECT_EQ(FrameOf(phase).kind, DLMONITOR_FRAME_PHASE);
  const std::string file = "model.py#tail";
  const gpu::ContextId line = sink.ChildAt(phase, gpu::GpuNodeKind::kPython, "forward",
                                           std::string_view(file).substr(0, 8), 31);
  ASSERT_NE(line, 0u);
  dlmonitor_frame_t frame{};
  frame.struct_size = sizeof(frame);
  dlmonitor_context_t parent = 0;
  ASSERT_EQ(dlmonitor_context_frame(line, &frame, &parent), DLMONITOR_OK);
  EXPECT_EQ(frame.kind, DLMONITOR_FRAME_PYTHON);
  EXPECT_STREQ(frame.name, "forward");
  EXPECT_STREQ(frame.file, "model.py");
  EXPECT_EQ(frame.line, 31u);
  EXPECT_EQ(parent, phase);
  // Another line of the same function: another node.
  EXPECT_NE(sink.ChildAt(phase, gpu::GpuNodeKind::kPython, "forward", "model.py", 32), line);
  EXPECT_EQ(FrameOf(sink.Child(line, gpu::GpuNodeKind::kUserScope, "layer0")).kind,
            DLMONITOR_FRAME_USER_SCOPE);
  EXPECT_EQ(FrameOf(sink.Child(line, gpu::GpuNodeKind::kOperator, "gemm_fusion_dot.3")).kind,
            DLMONITOR_FRAME_OPERATOR);
  EXPECT_EQ(sink.ChildAt(0, gpu::GpuNodeKind::kPython, "f", "a.py", 1), 0u);
}

TEST_F(MetricStoreSinkTest, InstructionNodesKeepTheirSourceLine) {
  MetricStoreSink sink(store_);
  const gpu::ContextId kernel = sink.Child(launch_context_, gpu::GpuNodeKind::kKernel, "k");
  const gpu::ContextId pc = sink.ChildAt(kernel, gpu::GpuNodeKind::kInstruction,
                                         "pc 0x0080", "/home/user/kernels.py", 24);
  ASSERT_NE(pc, 0u);
  const Frame frame = FrameOf(pc);
  EXPECT_EQ(frame.kind, DLMONITOR_FRAME_GPU_INSTRUCTION);
  EXPECT_EQ(frame.name, "pc 0x0080");
  EXPECT_EQ(frame.file, "/home/user/kernels.py");
  EXPECT_EQ(frame.line, 24u);
  // Named metrics (stall reasons) land under their names.
  const int stall = sink.RegisterNamedMetric("gpu_stall_wait", "samples", "");
  EXPECT_EQ(sink.RegisterNamedMetric("gpu_stall_wait", "samples", ""), stall);
  sink.AddNamed(pc, stall, 12);
  sink.AddNamed(0, stall, 5);  // no context: dropped
  EXPECT_EQ(Samples().at({pc, "gpu_stall_wait"}).sum, 12);
}

TEST_F(MetricStoreSinkTest, SamplesLandInTheStoreUnderTheMetricNames) {
  MetricStoreSink sink(store_);
  const gpu::ContextId kernel = sink.Child(launch_context_, gpu::GpuNodeKind::kKernel, "k");
  sink.Add(kernel, gpu::GpuMetric::kGpuTime, 100);
  sink.Add(kernel, gpu::GpuMetric::kGpuTime, 50);
  sink.Add(kernel, gpu::GpuMetric::kOccupancy, 0.5);
  sink.Add(0, gpu::GpuMetric::kGpuTime, 7);               // no context: dropped
  sink.Add(kernel, gpu::GpuMetric::kCount, 7);            // not a metric: dropped
  const auto samples = Samples();
  ASSERT_EQ(samples.size(), 2u);
  const Accumulator time = samples.at({kernel, "gpu_time"});
  EXPECT_EQ(time.count, 2u);
  EXPECT_DOUBLE_EQ(time.sum, 150);
  EXPECT_DOUBLE_EQ(time.min, 50);
  EXPECT_DOUBLE_EQ(time.max, 100);
  EXPECT_DOUBLE_EQ(samples.at({kernel, "occupancy"}).sum, 0.5);
}

// Attribution through the production sink builds the documented path
// launch context -> API -> kernel in DLMonitor's tree.
TEST_F(MetricStoreSinkTest, AttributionBuildsTheGpuPathInDlmonitor) {
  MetricStoreSink sink(store_);
  gpu::GpuAttribution attribution(sink);
  gpu::LaunchRecord launch;
  launch.correlation_id = 5;
  launch.context = launch_context_;
  launch.api_name = "cuLaunchKernelEx";
  attribution.OnLaunch(launch);
  gpu::KernelRecord kernel;
  kernel.correlation_id = 5;
  kernel.name = "ampere_sgemm";
  kernel.start_ns = 1000;
  kernel.end_ns = 1600;
  kernel.grid_x = kernel.grid_y = kernel.grid_z = 1;
  kernel.block_x = 64;
  kernel.block_y = kernel.block_z = 1;
  attribution.OnKernel(kernel);
  attribution.Flush();

  gpu::ContextId found = 0;
  for (const auto& [key, accumulator] : Samples()) {
    if (key.second == "gpu_time") {
      EXPECT_EQ(found, 0u);
      found = key.first;
      EXPECT_DOUBLE_EQ(accumulator.sum, 600);
    }
  }
  ASSERT_NE(found, 0u);
  dlmonitor_frame_t frames[8];
  for (auto& frame : frames) frame.struct_size = sizeof(frame);
  size_t depth = 0;
  ASSERT_EQ(dlmonitor_callpath_get(found, frames, 8, &depth), DLMONITOR_OK);
  ASSERT_EQ(depth, 4u);  // root, train_step, API, kernel
  EXPECT_STREQ(frames[1].name, "train_step");
  EXPECT_EQ(frames[2].kind, DLMONITOR_FRAME_GPU_API);
  EXPECT_STREQ(frames[2].name, "cuLaunchKernelEx");
  EXPECT_EQ(frames[3].kind, DLMONITOR_FRAME_GPU_KERNEL);
  EXPECT_STREQ(frames[3].name, "ampere_sgemm");
}

}  // namespace
}  // namespace deepcontext::profiler
