// Rules over individual GPU kernels, from their names and recorded launch
// shape.
#include <algorithm>
#include <map>
#include <string>
#include <string_view>

#include "tools/analyzer/rule.h"
#include "tools/analyzer/units.h"

namespace deepcontext::analyzer {

namespace {

using format::FrameKind;

// Names of cuBLAS/CUTLASS FP32 GEMM kernels running on the SIMT (CUDA core)
// path: "ampere_sgemm_128x64_tn", "sm90_xmma_gemm_f32f32_f32f32_f32_tn_...".
// Tensor-core variants name their math: tf32, s1688/s16816 (TF32 MMA
// shapes), hmma, gmma (Hopper warpgroup MMA), bf16, f16, tensorop.
bool IsFp32SimtGemm(std::string_view name) {
  if (ContainsAny(name, {"tf32", "s1688", "s16816", "hmma", "gmma", "bf16",
                         "f16", "tensorop", "i8816", "h884"})) {
    return false;
  }
  return Contains(name, "sgemm") || Contains(name, "f32f32_f32f32") ||
         (Contains(name, "gemm") && Contains(name, "fp32"));
}

// GEMM, convolution and attention kernels are tuned by their libraries and
// run well at low occupancy (Volkov, GTC 2010).
bool IsLibraryTunedKernel(std::string_view name) {
  return ContainsAny(
      name, {"gemm", "Gemm", "GEMM", "conv", "cudnn", "cutlass", "attention",
             "flash", "fmha", "nccl", "xmma", "cublas", "Cijk"});
}

}  // namespace

RuleOutcome CheckTensorCoresUnused(const ProfileView& view,
                                   const Thresholds& t) {
  RuleOutcome outcome;
  if (!view.metrics().gpu_time) {
    outcome.skipped = "no GPU activity in the profile";
    return outcome;
  }
  if (view.ComputeCapability() > 0 &&
      view.ComputeCapability() < t.tensor_core_min_cc) {
    outcome.skipped = "GPU without tensor cores (compute capability " +
                      FormatRatio(view.ComputeCapability()) + ")";
    return outcome;
  }
  const analysis::ProfileTree& tree = view.tree();
  // One finding per operator context: its FP32 GEMM kernels together.
  struct Group {
    double time = 0, runs = 0;
    NodeIndex heaviest = kNoNode;
    double heaviest_time = -1;
  };
  std::map<analysis::FrameId, Group> groups;  // by the user's source line
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    const analysis::Frame& frame = tree.frame_of(n);
    if (frame.kind != FrameKind::kGpuKernel || !IsFp32SimtGemm(frame.name)) {
      continue;
    }
    double time = view.Exclusive(n, view.metrics().gpu_time);
    if (time <= 0) continue;
    NodeIndex line = view.UserFrame(n);
    Group& group = groups[tree.node(line == kNoNode ? n : line).frame];
    group.time += time;
    group.runs += view.Count(n, view.metrics().gpu_time);
    if (time > group.heaviest_time) {
      group.heaviest_time = time;
      group.heaviest = n;
    }
  }
  for (const auto& [key, group] : groups) {
    if (!WorthReporting(view, t, group.time * t.tensor_core_saving_high)) {
      continue;
    }
    Finding f = MakeFinding(
        view, "tensor_cores_unused", group.heaviest,
        "FP32 GEMM on CUDA cores: " + FormatDuration(group.time) + " in " +
            FormatCount(group.runs) + " kernels",
        group.time * t.tensor_core_saving_low,
        group.time * t.tensor_core_saving_high,
        "FP32 GEMM time x (1 - FP32/tensor-core throughput), floored for "
        "memory-bound GEMMs");
    f.evidence.push_back({"fp32_gemm_time", group.time, "ns", "", 0});
    f.evidence.push_back({"compute_capability", view.ComputeCapability(), "",
                          ">=", t.tensor_core_min_cc});
    f.suggestion =
        "These matrix multiplies run in full FP32 on CUDA cores. Allow TF32 "
        "(same range, 10-bit mantissa) or run the region under autocast in "
        "BF16; keep dimensions multiples of 8.";
    f.example =
        "torch.set_float32_matmul_precision(\"high\")  # or "
        "torch.autocast(\"cuda\", torch.bfloat16)";
    outcome.findings.push_back(std::move(f));
  }
  return outcome;
}

RuleOutcome CheckLowOccupancy(const ProfileView& view, const Thresholds& t) {
  RuleOutcome outcome;
  const KnownMetrics& m = view.metrics();
  if (!m.gpu_time || (!m.occupancy && !m.blocks)) {
    outcome.skipped = "no kernel launch shape recorded";
    return outcome;
  }
  const analysis::ProfileTree& tree = view.tree();
  double gpu_total = tree.Total(*m.gpu_time);
  // One finding per user source line (a line's op may run several such
  // kernels, e.g. layer_norm's moments and normalization): the kernel
  // saving most is blamed, the savings of all add up.
  struct LineKernels {
    NodeIndex worst = kNoNode;
    double worst_high = -1, high = 0, count = 0;
    double time = 0, blocks = 0, occupancy = 0;
    bool small_grid = false, low_occupancy = false;
  };
  std::map<analysis::FrameId, LineKernels> lines;
  const double sms = view.SmCount();
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    const analysis::Frame& frame = tree.frame_of(n);
    if (frame.kind != FrameKind::kGpuKernel ||
        IsLibraryTunedKernel(frame.name)) {
      continue;
    }
    double time = view.Exclusive(n, m.gpu_time);
    if (time < t.occupancy_min_kernel_share * gpu_total || time <= 0) continue;
    double occupancy_count = view.Count(n, m.occupancy);
    double occupancy = occupancy_count > 0
                           ? view.Exclusive(n, m.occupancy) / occupancy_count
                           : 1.0;
    double blocks_count = view.Count(n, m.blocks);
    double blocks =
        blocks_count > 0 ? view.Exclusive(n, m.blocks) / blocks_count : 0;
    bool small_grid = sms > 0 && blocks > 0 && blocks < sms;
    bool low_occupancy = occupancy_count > 0 && occupancy < t.occupancy_low;
    if (!small_grid && !low_occupancy) continue;
    // Nsight Compute's local estimates: (SMs - grid) / SMs for small grids,
    // 1 - occupancy / target for low occupancy; the kernel's GPU time makes
    // them global.
    double local = 0;
    if (small_grid) local = std::max(local, (sms - blocks) / sms);
    if (low_occupancy)
      local = std::max(local, 1.0 - occupancy / t.occupancy_low);
    double high = time * local;
    NodeIndex line = view.UserFrame(n);
    LineKernels& at = lines[tree.node(line == kNoNode ? n : line).frame];
    at.high += high;
    at.count += 1;
    if (high > at.worst_high) {
      at = LineKernels{n,      high,      at.high,    at.count,     time,
                       blocks, occupancy, small_grid, low_occupancy};
    }
  }
  for (const auto& [frame, at] : lines) {
    if (!WorthReporting(view, t, at.high)) continue;
    Finding f = MakeFinding(
        view, "low_occupancy", at.worst,
        at.small_grid ? "grid of " + FormatCount(at.blocks) + " blocks on " +
                            FormatCount(sms) + " SMs"
                      : "theoretical occupancy " + FormatPercent(at.occupancy),
        at.high * 0.25, at.high,
        "kernel time x Nsight Compute's local speedup ((SMs-grid)/SMs or "
        "1-occupancy/target), summed over the line's kernels; lower quarter "
        "since latency may hide");
    f.evidence.push_back({"kernel_time", at.time, "ns",
                          ">=", t.occupancy_min_kernel_share * gpu_total});
    if (at.small_grid) {
      f.evidence.push_back({"blocks", at.blocks, "count", "<", sms});
    }
    if (at.low_occupancy) {
      f.evidence.push_back(
          {"occupancy", at.occupancy, "ratio", "<", t.occupancy_low});
    }
    if (at.count > 1) {
      f.evidence.push_back({"kernels_at_line", at.count, "count", "", 0});
    }
    f.suggestion =
        at.small_grid
            ? "The grid leaves SMs empty. Give the kernel more parallel work "
              "(batch several calls, split the reduction dimension) or, for "
              "your own Triton/CUDA kernel, use smaller blocks."
            : "Registers or shared memory per block limit resident warps. For "
              "your own kernels lower num_warps/BLOCK sizes or cap registers; "
              "for library kernels change shapes or batch work.";
    f.example = at.small_grid
                    ? "triton.Config({\"BLOCK_SIZE\": 256}, num_warps=4)"
                    : "__launch_bounds__(256, 2)  // or triton num_warps=4";
    outcome.findings.push_back(std::move(f));
  }
  return outcome;
}

}  // namespace deepcontext::analyzer
