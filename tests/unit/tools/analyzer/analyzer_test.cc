// Each rule on both sides of its threshold, on hand-built profiles.
#include "tools/analyzer/analyzer.h"

#include <gtest/gtest.h>

#include "tests/unit/tools/analysis/test_profiles.h"
#include "tests/unit/tools/analyzer/gpu_profiles.h"

namespace deepcontext::analyzer {
namespace {

using analysis::ProfileTree;
using analysis::testing::kMs;
using analysis::testing::ProfileBuilder;
using format::FrameKind;
using testing::GpuProfileSpec;
using testing::MakeGpuProfile;

std::vector<Finding> FindingsOf(const format::Profile& profile,
                                const std::string& rule) {
  ProfileTree tree = ProfileTree::FromProfile(profile);
  Analysis analysis = Analyze(tree, {}, {rule});
  return analysis.findings;
}

std::vector<Finding> FindingsOf(const GpuProfileSpec& spec,
                                const std::string& rule) {
  return FindingsOf(MakeGpuProfile(spec), rule);
}

TEST(Analyzer, HealthyGpuProfileHasNoFindings) {
  ProfileTree tree = ProfileTree::FromProfile(MakeGpuProfile({}));
  Analysis analysis = Analyze(tree);
  EXPECT_TRUE(analysis.findings.empty()) << analysis.findings[0].rule_id;
  EXPECT_EQ(analysis.rules_run.size(), 10u);
}

TEST(Analyzer, CpuProfileSkipsGpuRulesAndSaysWhy) {
  ProfileTree tree =
      ProfileTree::FromProfile(analysis::testing::MakeTrainingProfile());
  Analysis analysis = Analyze(tree);
  EXPECT_TRUE(analysis.findings.empty());
  bool gpu_idle_skipped = false;
  for (const SkippedRule& skipped : analysis.skipped) {
    if (skipped.rule_id == "gpu_idle") {
      gpu_idle_skipped = true;
      EXPECT_EQ(skipped.reason, "no GPU activity in the profile");
    }
  }
  EXPECT_TRUE(gpu_idle_skipped);
}

TEST(Analyzer, CpuProgramOnAGpuMachineSkipsGpuRules) {
  // A CPU program run where CUDA is available: the profile names the device
  // but records no GPU work, which is no idle GPU to report.
  format::Profile profile = analysis::testing::MakeTrainingProfile();
  profile.metadata.emplace_back("gpu0_compute_capability", "9.0");
  profile.metadata.emplace_back("gpu0_sm_count", "132");
  profile.metadata.emplace_back("gpu0_busy_ns", "0");
  ProfileTree tree = ProfileTree::FromProfile(profile);
  Analysis analysis = Analyze(tree);
  EXPECT_TRUE(analysis.findings.empty()) << analysis.findings[0].rule_id;
  bool gpu_idle_skipped = false;
  for (const SkippedRule& skipped : analysis.skipped) {
    if (skipped.rule_id == "gpu_idle") gpu_idle_skipped = true;
  }
  EXPECT_TRUE(gpu_idle_skipped);
}

TEST(GpuIdle, FiresBelowHalfBusyAtTheLineHoldingTheCpu) {
  GpuProfileSpec spec;
  spec.gpu_busy_ns = 0.3e9;
  spec.loader_host_ns = 0.6e9;
  auto findings = FindingsOf(spec, "gpu_idle");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].context.line, 42u);
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 0.7e9);
  EXPECT_EQ(findings[0].severity, Severity::kHigh);
  EXPECT_EQ(findings[0].evidence[0].metric, "gpu_busy_share");
  EXPECT_DOUBLE_EQ(findings[0].evidence[0].threshold, 0.5);
}

TEST(GpuIdle, SilentAtHalfBusy) {
  GpuProfileSpec spec;
  spec.gpu_busy_ns = 0.5e9;
  EXPECT_TRUE(FindingsOf(spec, "gpu_idle").empty());
}

TEST(GpuIdle, MeasuresIdleBetweenTheFirstAndLastGpuActivity) {
  GpuProfileSpec spec;  // 30 % of the run, but 75 % of the GPU's active span
  spec.gpu_busy_ns = 0.3e9;
  spec.gpu_span_ns = 0.4e9;
  EXPECT_TRUE(FindingsOf(spec, "gpu_idle").empty());
  spec.gpu_span_ns = 0.8e9;
  auto findings = FindingsOf(spec, "gpu_idle");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 0.5e9);
}

TEST(HostDeviceSync, FiresAtTheItemLine) {
  GpuProfileSpec spec;
  spec.sync_ns = 50 * kMs;
  auto findings = FindingsOf(spec, "host_device_sync");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].context.line, 50u);
  EXPECT_EQ(findings[0].context.op, "aten::item");
  EXPECT_EQ(findings[0].context.kernel, "sync: stream");
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 50 * kMs);
  // 100 syncs x 2 launch latencies of 5 us.
  EXPECT_DOUBLE_EQ(findings[0].benefit.low_ns, 1 * kMs);
  EXPECT_NE(findings[0].suggestion.find(".item()"), std::string::npos);
}

TEST(HostDeviceSync, FiresOnBlockingCopiesWithoutASyncNode) {
  // .item() as a synchronous device-to-host copy: the wait is the op's
  // wall time; the copy itself takes microseconds on the GPU.
  ProfileBuilder b;
  b.Metric("calls", "count");
  b.Metric("wall_time", "ns");
  b.Metric("gpu_time", "ns");
  b.Meta("start_time_ns", "0");
  b.Meta("end_time_ns", "1000000000");
  auto thread = b.Add(0, FrameKind::kThread, "main thread");
  auto line = b.Add(thread, FrameKind::kPythonFrame, "step", "/w/train.py", 17);
  auto item = b.Add(line, FrameKind::kOperator, "aten::item");
  auto dense = b.Add(item, FrameKind::kOperator, "aten::_local_scalar_dense");
  auto api = b.Add(dense, FrameKind::kGpuApi, "cuMemcpyDtoHAsync_v2");
  auto copy = b.Add(api, FrameKind::kGpuMemcpy, "memcpy DtoH (pageable)");
  b.Value(item, "calls", 300, 300);
  b.Value(item, "wall_time", 1 * kMs, 300);
  b.Value(dense, "wall_time", 80 * kMs, 300);
  b.Value(copy, "gpu_time", 0.6 * kMs, 300);
  auto findings = FindingsOf(b.profile(), "host_device_sync");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].context.line, 17u);
  EXPECT_EQ(findings[0].context.kernel, "memcpy DtoH (pageable)");
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 81 * kMs);
  EXPECT_DOUBLE_EQ(findings[0].evidence[1].value, 300);
}

// x.to("cuda") from pageable memory, 100 times at line 28: the copy takes
// copy_ms on the GPU, the operator wall_ms on the host (the rest waits for
// the GPU's queue), and torch synchronizes the stream after it.
format::Profile BlockingUploadProfile(double wall_ms, double copy_ms) {
  ProfileBuilder b;
  b.Metric("calls", "count");
  b.Metric("wall_time", "ns");
  b.Metric("gpu_time", "ns");
  b.Metric("sync_time", "ns");
  b.Meta("start_time_ns", "0");
  b.Meta("end_time_ns", "1000000000");
  auto thread = b.Add(0, FrameKind::kThread, "main thread");
  auto line = b.Add(thread, FrameKind::kPythonFrame, "step", "/w/train.py", 28);
  auto to = b.Add(line, FrameKind::kOperator, "aten::to");
  auto copy_api = b.Add(to, FrameKind::kGpuApi, "cuMemcpyHtoDAsync_v2");
  auto copy = b.Add(copy_api, FrameKind::kGpuMemcpy, "memcpy HtoD (pageable)");
  auto sync_api = b.Add(to, FrameKind::kGpuApi, "cuStreamSynchronize");
  auto sync = b.Add(sync_api, FrameKind::kGpuSync, "sync: stream");
  b.Value(to, "calls", 100, 100);
  b.Value(to, "wall_time", wall_ms * kMs, 100);
  b.Value(copy, "gpu_time", copy_ms * kMs, 100);
  b.Value(sync, "sync_time", 0.1 * kMs, 100);
  return b.profile();
}

TEST(HostDeviceSync, BlockingUploadWaitsForTheQueueNotForItsCopy) {
  auto findings = FindingsOf(BlockingUploadProfile(80, 30), "host_device_sync");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].context.line, 28u);
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 50 * kMs);
  EXPECT_NE(findings[0].suggestion.find("host-to-device"), std::string::npos);
  EXPECT_NE(findings[0].example.find("non_blocking=True"), std::string::npos);
  // With an idle GPU the upload is only its copy: pageable_copy's finding.
  EXPECT_TRUE(
      FindingsOf(BlockingUploadProfile(31, 30), "host_device_sync").empty());
}

TEST(HostDeviceSync, SilentBelowOnePercentOfTheRun) {
  GpuProfileSpec spec;
  spec.sync_ns = 9 * kMs;
  EXPECT_TRUE(FindingsOf(spec, "host_device_sync").empty());
}

TEST(HostDeviceSync, SilentOnAFewNecessaryWaits) {
  GpuProfileSpec spec;  // one long wait at the end of the loop
  spec.sync_ns = 200 * kMs;
  spec.sync_count = 9;
  EXPECT_TRUE(FindingsOf(spec, "host_device_sync").empty());
}

TEST(PageableCopy, FiresOnLargeSlowCopies) {
  GpuProfileSpec spec;
  spec.pageable_bytes = 100 * 4.0 * 1024 * 1024;  // 100 x 4 MiB
  spec.pageable_ns = 100 * kMs;                   // ~4 GB/s
  auto findings = FindingsOf(spec, "pageable_copy");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].context.line, 30u);
  EXPECT_EQ(findings[0].context.kernel, "memcpy HtoD (pageable)");
  double pinned = spec.pageable_bytes / 50.0;
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, spec.pageable_ns - pinned);
}

TEST(PageableCopy, SilentOnSmallCopiesAndOnCopiesAtPinnedSpeed) {
  GpuProfileSpec small;
  small.pageable_bytes = 100 * 32.0 * 1024;
  small.pageable_ns = 100 * kMs;
  EXPECT_TRUE(FindingsOf(small, "pageable_copy").empty());
  GpuProfileSpec fast;
  fast.pageable_bytes = 100 * 4.0 * 1024 * 1024;
  fast.pageable_ns = fast.pageable_bytes / 60.0;
  EXPECT_TRUE(FindingsOf(fast, "pageable_copy").empty());
}

TEST(PageableCopy, SilentOnAOneTimeLoad) {
  // One 400 MiB copy (an embedding table moved to the GPU once): pinning
  // it first would cost as much as it saves. Ten copies at the line fire.
  GpuProfileSpec once;
  once.pageable_bytes = 400.0 * 1024 * 1024;
  once.pageable_count = 1;
  once.pageable_ns = 100 * kMs;
  EXPECT_TRUE(FindingsOf(once, "pageable_copy").empty());
  GpuProfileSpec repeated = once;
  repeated.pageable_count = 10;
  EXPECT_EQ(FindingsOf(repeated, "pageable_copy").size(), 1u);
}

TEST(TensorCoresUnused, FiresOnSimtSgemmKernels) {
  for (const char* name :
       {"ampere_sgemm_128x64_tn",
        "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8"}) {
    GpuProfileSpec spec;
    spec.gemm_kernel = name;
    auto findings = FindingsOf(spec, "tensor_cores_unused");
    ASSERT_EQ(findings.size(), 1u) << name;
    EXPECT_EQ(findings[0].context.line, 60u);
    EXPECT_EQ(findings[0].context.kernel, name);
    EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 0.3e9 * 0.85);
  }
}

TEST(TensorCoresUnused, SilentOnTensorCoreKernels) {
  for (const char* name : {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
                           "cutlass_80_tensorop_s1688gemm_128x128_32x3_nn",
                           "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_gmma"}) {
    GpuProfileSpec spec;
    spec.gemm_kernel = name;
    EXPECT_TRUE(FindingsOf(spec, "tensor_cores_unused").empty()) << name;
  }
}

TEST(LaunchBound, FiresWhenHostTimeExceedsManyShortKernels) {
  GpuProfileSpec spec;
  spec.tiny_kernels = 2000;  // 3 us each: 6 ms of GPU time
  spec.tiny_host_ns = 40 * kMs;
  auto findings = FindingsOf(spec, "launch_bound");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].context.line, 70u);
  // min(2000 launches x 5 us, 40 ms - 6 ms).
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 10 * kMs);
}

TEST(LaunchBound, SilentWhenTheGpuIsTheBottleneckOrKernelsAreFew) {
  GpuProfileSpec gpu_bound;
  gpu_bound.tiny_kernels = 2000;
  gpu_bound.tiny_host_ns = 5 * kMs;
  EXPECT_TRUE(FindingsOf(gpu_bound, "launch_bound").empty());
  GpuProfileSpec few;
  few.tiny_kernels = 150;
  few.tiny_host_ns = 40 * kMs;
  EXPECT_TRUE(FindingsOf(few, "launch_bound").empty());
}

TEST(LowOccupancy, FiresOnSmallGridOfOwnKernel) {
  GpuProfileSpec spec;
  spec.custom_kernel_ns = 100 * kMs;
  spec.custom_blocks = 33;
  auto findings = FindingsOf(spec, "low_occupancy");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].context.kernel, "my_kernel");
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 100 * kMs * 0.75);
}

TEST(LowOccupancy, OneFindingPerLineForSeveralKernels) {
  // Two small-grid kernels under one line (layer_norm's moments and
  // normalization kernels): one finding, blaming the first, both saved.
  GpuProfileSpec spec;
  spec.custom_kernel_ns = 100 * kMs;
  spec.custom_blocks = 33;
  spec.custom_kernels = 2;
  auto findings = FindingsOf(spec, "low_occupancy");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].context.line, 80u);
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 2 * 100 * kMs * 0.75);
}

TEST(LowOccupancy, SilentOnFullGridsAndOnLibraryGemms) {
  GpuProfileSpec spec;  // the GEMM has occupancy 0.125 but is library-tuned
  spec.custom_kernel_ns = 100 * kMs;
  spec.custom_blocks = 1024;
  spec.custom_occupancy = 0.5;
  EXPECT_TRUE(FindingsOf(spec, "low_occupancy").empty());
}

// A line calling ops with a [forward] and a [backward] phase below it.
format::Profile ForwardBackwardProfile(double forward_ms, double backward_ms) {
  ProfileBuilder b;
  b.Metric("calls", "count");
  b.Metric("cpu_time", "ns");
  b.Meta("start_time_ns", "0");
  b.Meta("end_time_ns", "1000000000");
  auto thread = b.Add(0, FrameKind::kThread, "main thread");
  auto line = b.Add(thread, FrameKind::kPythonFrame, "main", "/w/train.py", 12);
  auto fwd = b.Add(line, FrameKind::kPhase, "[forward]");
  auto bwd = b.Add(line, FrameKind::kPhase, "[backward]");
  auto emb = b.Add(fwd, FrameKind::kOperator, "aten::embedding");
  auto emb_bwd = b.Add(bwd, FrameKind::kOperator, "EmbeddingBackward0");
  auto small = b.Add(bwd, FrameKind::kOperator, "SumBackward0");
  b.Value(emb, "cpu_time", forward_ms * kMs, 10);
  b.Value(emb_bwd, "cpu_time", (backward_ms - 1) * kMs, 10);
  b.Value(small, "cpu_time", 1 * kMs, 10);
  return b.profile();
}

TEST(ForwardBackwardImbalance, FiresAboveThreeToOneOnTheCostliestBackwardOp) {
  auto findings =
      FindingsOf(ForwardBackwardProfile(10, 40), "fwd_bwd_imbalance");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].context.line, 12u);
  EXPECT_EQ(findings[0].context.op, "EmbeddingBackward0");
  EXPECT_EQ(findings[0].context.phase, "backward");
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 40 * kMs * (4.0 - 2.0) / 4.0);
  EXPECT_NE(findings[0].suggestion.find("sparse"), std::string::npos);
}

TEST(ForwardBackwardImbalance, SilentAtThreeToOne) {
  EXPECT_TRUE(
      FindingsOf(ForwardBackwardProfile(10, 30), "fwd_bwd_imbalance").empty());
}

// Elementwise ops called from one line, `per_execution` of them each time.
format::Profile ElementwiseProfile(const std::string& file, int per_execution) {
  ProfileBuilder b;
  b.Metric("calls", "count");
  b.Metric("cpu_time", "ns");
  b.Meta("start_time_ns", "0");
  b.Meta("end_time_ns", "1000000000");
  auto thread = b.Add(0, FrameKind::kThread, "main thread");
  auto line = b.Add(thread, FrameKind::kPythonFrame, "gelu", file, 7);
  auto tanh = b.Add(line, FrameKind::kOperator, "aten::tanh");
  b.Value(tanh, "cpu_time", 50 * kMs, 100);
  b.Value(tanh, "calls", 100, 100);
  if (per_execution > 1) {
    auto mul = b.Add(line, FrameKind::kOperator, "aten::mul");
    b.Value(mul, "cpu_time", 50 * kMs, (per_execution - 1) * 100);
    b.Value(mul, "calls", (per_execution - 1) * 100, (per_execution - 1) * 100);
  }
  return b.profile();
}

TEST(UnfusedElementwise, FiresAtThreeOpsPerExecutionOfAUserLine) {
  auto findings =
      FindingsOf(ElementwiseProfile("/w/model.py", 3), "unfused_elementwise");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].context.line, 7u);
  // 100 ms of chain; the fused op costs at least tanh's 50 ms.
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 50 * kMs);
}

TEST(UnfusedElementwise, FusedCostIsOneCallPerExecutionNotOneOperator) {
  // GELU on the GPU: nine memory-bound calls per execution of equal cost,
  // six of them aten::mul. Fused, one pass remains: 80 of 90 ms saved (the
  // mul node's 60 ms is not the fused cost).
  ProfileBuilder b;
  b.Metric("calls", "count");
  b.Metric("cpu_time", "ns");
  b.Meta("start_time_ns", "0");
  b.Meta("end_time_ns", "1000000000");
  auto thread = b.Add(0, FrameKind::kThread, "main thread");
  auto line = b.Add(thread, FrameKind::kPythonFrame, "gelu", "/w/model.py", 7);
  for (auto [name, per_execution] :
       {std::pair<const char*, int>{"aten::tanh", 1},
        {"aten::mul", 6},
        {"aten::add", 2}}) {
    auto op = b.Add(line, FrameKind::kOperator, name);
    b.Value(op, "cpu_time", per_execution * 10 * kMs, per_execution * 100);
    b.Value(op, "calls", per_execution * 100, per_execution * 100);
  }
  auto findings = FindingsOf(b.profile(), "unfused_elementwise");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 80 * kMs);
}

TEST(UnfusedElementwise, SilentOnShortChainsAndLibraryLines) {
  EXPECT_TRUE(
      FindingsOf(ElementwiseProfile("/w/model.py", 2), "unfused_elementwise")
          .empty());
  EXPECT_TRUE(
      FindingsOf(ElementwiseProfile("/usr/lib/python3/dist-packages/x/y.py", 6),
                 "unfused_elementwise")
          .empty());
}

// The step line is reached along `paths` call paths (warm-up and timed
// loops calling the same helper).
// With step_scope_ms > 0, torch's "Optimizer.step#Adam.step" scope wraps
// the loop and holds that much time itself (the Python for-loop).
format::Profile OptimizerProfile(const std::string& function, int paths = 1,
                                 double step_scope_ms = 0) {
  ProfileBuilder b;
  b.Metric("calls", "count");
  b.Metric("cpu_time", "ns");
  b.Meta("start_time_ns", "0");
  b.Meta("end_time_ns", "1000000000");
  const std::string adam = "/usr/lib/python3/dist-packages/torch/optim/adam.py";
  auto thread = b.Add(0, FrameKind::kThread, "main thread");
  for (int path = 0; path < paths; ++path) {
    auto caller = b.Add(thread, FrameKind::kPythonFrame, "timed", "/w/train.py",
                        static_cast<uint32_t>(20 + path));
    auto line =
        b.Add(caller, FrameKind::kPythonFrame, "main", "/w/train.py", 13);
    auto step = b.Add(line, FrameKind::kPythonFrame, "step", adam, 150);
    if (step_scope_ms > 0) {
      step = b.Add(step, FrameKind::kUserScope, "Optimizer.step#Adam.step");
      b.Value(step, "cpu_time", step_scope_ms * kMs, 1000);
      b.Value(step, "calls", 1000, 1000);
      step = b.Add(step, FrameKind::kPythonFrame, "adam", adam, 200);
    }
    for (uint32_t at : {300u, 310u}) {
      auto loop = b.Add(step, FrameKind::kPythonFrame, function, adam, at);
      auto op = b.Add(loop, FrameKind::kOperator, "aten::mul_");
      b.Value(op, "cpu_time", 100 * kMs, 1000);
      b.Value(op, "calls", 1000, 1000);
    }
  }
  return b.profile();
}

TEST(SlowOptimizer, FiresOnceAtTheStepLineForTheForLoop) {
  auto findings =
      FindingsOf(OptimizerProfile("_single_tensor_adam"), "slow_optimizer");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].context.line, 13u);
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 200 * kMs * 0.5);  // CPU
  EXPECT_NE(findings[0].example.find("Adam("), std::string::npos);
}

TEST(SlowOptimizer, OneFindingForALineReachedAlongTwoPaths) {
  auto findings =
      FindingsOf(OptimizerProfile("_single_tensor_adam", 2), "slow_optimizer");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 400 * kMs * 0.5);
}

TEST(SlowOptimizer, CountsTheWholeStepScopeOnce) {
  // 300 ms of Python loop in the scope itself plus 2 x 100 ms of operators:
  // the loop's lines share one scope, counted once.
  auto findings = FindingsOf(OptimizerProfile("_single_tensor_adam", 1, 300),
                             "slow_optimizer");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 500 * kMs * 0.5);
}

TEST(SlowOptimizer, FiresWhenOnlyTheStepScopeMakesItWorthReporting) {
  // The operators alone (2 x 5 ms, 5 ms saved) are under 1 % of the 1 s run;
  // with the Python loop in the scope (40 ms) the step saves 25 ms.
  ProfileBuilder b;
  b.Metric("calls", "count");
  b.Metric("wall_time", "ns");
  b.Meta("start_time_ns", "0");
  b.Meta("end_time_ns", "1000000000");
  const std::string adam = "/usr/lib/python3/dist-packages/torch/optim/adam.py";
  auto thread = b.Add(0, FrameKind::kThread, "main thread");
  auto line = b.Add(thread, FrameKind::kPythonFrame, "main", "/w/train.py", 13);
  auto scope = b.Add(line, FrameKind::kUserScope, "Optimizer.step#Adam.step");
  b.Value(scope, "wall_time", 40 * kMs, 10);
  auto adam_fn = b.Add(scope, FrameKind::kPythonFrame, "adam", adam, 200);
  for (uint32_t at : {300u, 310u}) {
    auto loop = b.Add(adam_fn, FrameKind::kPythonFrame, "_single_tensor_adam",
                      adam, at);
    auto op = b.Add(loop, FrameKind::kOperator, "aten::mul_");
    b.Value(op, "wall_time", 5 * kMs, 1000);
    b.Value(op, "calls", 1000, 1000);
  }
  auto findings = FindingsOf(b.profile(), "slow_optimizer");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].context.line, 13u);
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 50 * kMs * 0.5);
}

TEST(SlowOptimizer, SilentOnForeach) {
  EXPECT_TRUE(
      FindingsOf(OptimizerProfile("_multi_tensor_adam"), "slow_optimizer")
          .empty());
}

// A training line calling optimizer.zero_grad(), whose zero_ ops fill
// every gradient (set_to_none=False), or module.zero_grad from `file`.
format::Profile ZeroGradProfile(const std::string& function,
                                const std::string& file, double fill_ms) {
  ProfileBuilder b;
  b.Metric("calls", "count");
  b.Metric("wall_time", "ns");
  b.Meta("start_time_ns", "0");
  b.Meta("end_time_ns", "1000000000");
  auto thread = b.Add(0, FrameKind::kThread, "main thread");
  auto line = b.Add(thread, FrameKind::kPythonFrame, "main", "/w/train.py", 12);
  auto zero_grad = b.Add(line, FrameKind::kPythonFrame, function, file, 279);
  auto zero = b.Add(zero_grad, FrameKind::kOperator, "aten::zero_");
  auto fill = b.Add(zero, FrameKind::kOperator, "aten::fill_");
  b.Value(zero, "wall_time", 1 * kMs, 1000);
  b.Value(zero, "calls", 1000, 1000);
  b.Value(fill, "wall_time", (fill_ms - 1) * kMs, 1000);
  return b.profile();
}

TEST(ZeroGradFill, FiresOnFillsUnderTorchZeroGrad) {
  const std::string optim =
      "/usr/lib/python3/dist-packages/torch/optim/optimizer.py";
  auto findings = FindingsOf(ZeroGradProfile("Optimizer.zero_grad", optim, 80),
                             "zero_grad_fill");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].context.line, 12u);
  EXPECT_DOUBLE_EQ(findings[0].benefit.high_ns, 80 * kMs);
  EXPECT_NE(findings[0].example.find("set_to_none=True"), std::string::npos);
}

TEST(ZeroGradFill, SilentOnSmallFillsAndOnUserFunctionsOfThatName) {
  const std::string optim =
      "/usr/lib/python3/dist-packages/torch/optim/optimizer.py";
  EXPECT_TRUE(FindingsOf(ZeroGradProfile("Optimizer.zero_grad", optim, 9),
                         "zero_grad_fill")
                  .empty());
  EXPECT_TRUE(FindingsOf(ZeroGradProfile("zero_grad", "/w/mine.py", 80),
                         "zero_grad_fill")
                  .empty());
}

TEST(Analyzer, RanksByBenefitAndDropsFindingsUnderOnePercent) {
  GpuProfileSpec spec;
  spec.sync_ns = 50 * kMs;
  spec.gemm_kernel = "ampere_sgemm_128x64_tn";
  spec.custom_kernel_ns = 20 * kMs;
  spec.custom_blocks = 131;  // saves 20 ms / 132: below 1 %
  ProfileTree tree = ProfileTree::FromProfile(MakeGpuProfile(spec));
  Analysis analysis = Analyze(tree);
  ASSERT_EQ(analysis.findings.size(), 2u);
  EXPECT_EQ(analysis.findings[0].rule_id, "tensor_cores_unused");
  EXPECT_EQ(analysis.findings[1].rule_id, "host_device_sync");
}

}  // namespace
}  // namespace deepcontext::analyzer
