// The gpu_counters rule: hot kernels whose hardware counters (`deepcontext
// run --gpu-metrics`) show them far from the peak of the unit they depend
// on: a memory-bound kernel at low DRAM throughput (a poor access pattern:
// strided, uncoalesced or gathered loads), and a GEMM with the tensor pipe
// mostly idle (FP32 math, unaligned shapes, tiny tiles).
#include <algorithm>
#include <string>
#include <string_view>

#include "tools/analysis/kernel_counters.h"
#include "tools/analyzer/rule.h"
#include "tools/analyzer/units.h"

namespace deepcontext::analyzer {
namespace {

// A kernel must hold this share of the GPU time to be worth a finding.
constexpr double kMinKernelShare = 0.05;
// Memory-bound: DRAM is its busiest unit, yet below this share of peak
// (a streaming kernel reaches 80-90 % on H100/H200; Nsight Compute's
// roofline calls < 60 % of peak bandwidth "not saturating").
constexpr double kLowDramPct = 40;
// What a streaming kernel reaches: the benefit assumes the kernel could
// run at this DRAM throughput.
constexpr double kReachableDramPct = 80;
// GEMM: tensor pipe active below this share of cycles. cuBLAS BF16/FP16
// GEMMs of large aligned shapes keep it 60-90 % busy.
constexpr double kLowTensorPct = 30;
constexpr double kReachableTensorPct = 70;

// cuBLAS/CUTLASS/Triton matrix products by name: "sm90_xmma_gemm_...",
// "ampere_bf16_s16816gemm_...", "cutlass_...gemm", "nvjet_...", "matmul_kernel".
bool IsGemm(std::string_view name) {
  return ContainsAny(name, {"gemm", "Gemm", "GEMM", "xmma", "cutlass", "nvjet", "matmul",
                            "wgmma", "Cijk"});
}

std::string Pct(double value) { return FormatPercent(value / 100.0); }

// Up to Hopper, warp (mma) and warpgroup (wgmma) MMA instructions run on
// the same tensor pipe, which the hmma counter measures: on the H200 an
// sm90 FP16 GEMM (nvjet, wgmma) read 94.9 % on it. Blackwell's tcgen05 MMA
// runs on a separate tensor-core unit, so there a low share means
// something only when a counter of that unit (or gmma) was measured.
bool TensorPipeSeesGemms(const ProfileView& view) {
  const double capability = view.ComputeCapability();
  if (capability > 0 && capability < 10.0) return true;
  for (const analysis::SourceInfo& source : view.tree().sources()) {
    if (ContainsAny(source.Metadata("gpu_metrics"), {"gmma", "pipe_tc_"})) return true;
  }
  return false;
}

}  // namespace

RuleOutcome CheckGpuCounters(const ProfileView& view, const Thresholds& t) {
  RuleOutcome outcome;
  const analysis::ProfileTree& tree = view.tree();
  if (!analysis::HasKernelCounters(tree)) {
    outcome.skipped = "no GPU hardware counters (deepcontext run --gpu-metrics)";
    return outcome;
  }
  const double gpu_total =
      view.metrics().gpu_time ? tree.Total(*view.metrics().gpu_time) : 0;
  const bool tensor_pipe_sees_gemms = TensorPipeSeesGemms(view);
  for (const analysis::KernelCounters& kernel : analysis::MeasuredKernels(tree)) {
    if (kernel.gpu_time <= 0) continue;
    if (gpu_total > 0 && kernel.gpu_time < kMinKernelShare * gpu_total) continue;
    const std::string& name = tree.frame_of(kernel.kernel).name;
    const double sm = kernel.sm_pct.value_or(0);
    if (IsGemm(name) && tensor_pipe_sees_gemms && kernel.tensor_pipe_pct &&
        *kernel.tensor_pipe_pct < kLowTensorPct) {
      const double tensor = *kernel.tensor_pipe_pct;
      // At the reachable tensor-pipe share the same math takes
      // tensor / reachable of the time.
      const double high = kernel.gpu_time * (1.0 - std::max(tensor, 1.0) / kReachableTensorPct);
      if (!WorthReporting(view, t, high)) continue;
      Finding f = MakeFinding(
          view, "gpu_counters", kernel.kernel,
          "GEMM with the tensor pipe mostly idle (tensor pipe active " + Pct(tensor) +
              " of cycles, SM throughput " + Pct(sm) + ")",
          high * 0.25, high,
          "kernel GPU time x (1 - tensor-pipe share / 70 %, what large BF16 GEMMs "
          "reach); lower quarter since shapes may not allow more");
      f.evidence.push_back({"kernel_gpu_time", kernel.gpu_time, "ns", ">=",
                            kMinKernelShare * gpu_total});
      f.evidence.push_back({"tensor_pipe_pct", tensor, "percent", "<", kLowTensorPct});
      f.evidence.push_back({"launches_measured", static_cast<double>(kernel.launches),
                            "count", "", 0});
      f.suggestion =
          "Feed the tensor cores: run the matmul in BF16/FP16 (torch.autocast) or allow "
          "TF32 for FP32, make M, N and K multiples of 16 (pad the hidden size, the "
          "vocabulary), and batch many small matmuls into one (torch.bmm) so that "
          "tiles fill the SMs.";
      f.example =
          "torch.backends.cuda.matmul.allow_tf32 = True  # or torch.autocast(\"cuda\", "
          "torch.bfloat16)";
      outcome.findings.push_back(std::move(f));
      continue;
    }
    if (!kernel.dram_pct) continue;
    const double dram = *kernel.dram_pct;
    // Memory-bound: DRAM is the busier unit, and neither is near its peak.
    if (IsGemm(name) || dram < sm || dram >= kLowDramPct || sm >= kLowDramPct) continue;
    const double high = kernel.gpu_time * (1.0 - std::max(dram, 1.0) / kReachableDramPct);
    if (!WorthReporting(view, t, high)) continue;
    Finding f = MakeFinding(
        view, "gpu_counters", kernel.kernel,
        "memory-bound kernel at low DRAM throughput (DRAM " + Pct(dram) + " of peak, SM " +
            Pct(sm) + "): a poor access pattern",
        high * 0.25, high,
        "kernel GPU time x (1 - DRAM share / 80 %, what streaming kernels reach); lower "
        "quarter since the access pattern may be inherent");
    f.evidence.push_back({"kernel_gpu_time", kernel.gpu_time, "ns", ">=",
                          kMinKernelShare * gpu_total});
    f.evidence.push_back({"dram_throughput_pct", dram, "percent", "<", kLowDramPct});
    f.evidence.push_back({"sm_throughput_pct", sm, "percent", "<=", dram});
    if (kernel.occupancy) {
      f.evidence.push_back({"achieved_occupancy", *kernel.occupancy, "ratio", "", 0});
    }
    f.suggestion =
        "The kernel waits on memory without using its bandwidth: make accesses "
        "contiguous and coalesced (call .contiguous() before it, avoid transposed or "
        "strided views and index gathers), load wider vectors, and keep more loads in "
        "flight (more warps per SM, several elements per thread).";
    f.example = "x = x.contiguous()  # before the op whose kernel reads it strided";
    outcome.findings.push_back(std::move(f));
  }
  return outcome;
}

}  // namespace deepcontext::analyzer
