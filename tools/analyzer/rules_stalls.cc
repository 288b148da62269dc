// The gpu_stalls rule: hot kernels whose instruction samples
// (`deepcontext run --gpu-samples`) are dominated by one stall reason, with
// what that reason usually means and what to change.
#include <string>
#include <string_view>

#include "tools/analysis/stall_reasons.h"
#include "tools/analyzer/rule.h"
#include "tools/analyzer/units.h"

namespace deepcontext::analyzer {
namespace {

// Below these a kernel's samples say too little: a reason needs a clear
// majority of enough samples to be named.
constexpr double kMinKernelSamples = 50;
constexpr double kMinDominantShare = 0.3;
// A kernel must hold this share of the GPU time to be worth a finding.
constexpr double kMinKernelShare = 0.05;

struct Advice {
  std::string_view reason;
  std::string_view diagnosis;  // what the kernel is, in one phrase
  std::string_view suggestion;
  std::string_view example;
};

constexpr Advice kAdvice[] = {
    {"long_scoreboard", "memory-bound: warps wait for global memory",
     "Move fewer bytes: fuse this kernel with its neighbours (torch.compile), "
     "use a narrower dtype (bf16/fp8), make loads contiguous and coalesced; "
     "in your own Triton kernel, load wider blocks and reuse them from "
     "registers/shared memory.",
     "fused = torch.compile(step)  # or tl.load(ptr + offs, ...) on contiguous offs"},
    {"lg_throttle", "memory-bound: the load/store queue is full of small accesses",
     "Issue fewer, wider memory instructions: vectorize loads (128-bit), "
     "avoid per-element gathers, fuse elementwise chains.",
     "x = tl.load(ptr + tl.arange(0, BLOCK))  # one wide load per thread"},
    {"math_pipe_throttle", "compute-bound: one math pipe is saturated",
     "Use faster math: tensor cores (TF32/BF16 via autocast or tl.dot), "
     "lower precision, or fewer instructions per element (fast math, "
     "strength reduction).",
     "torch.autocast(\"cuda\", torch.bfloat16)  # or tl.dot in Triton"},
    {"wait", "latency-bound on fixed-latency dependencies (little instruction-level parallelism)",
     "Give each thread independent work: unroll, process several elements "
     "per thread, break long dependent chains; more warps per SM help too.",
     "for i in tl.static_range(4): acc_i += ...  # independent accumulators"},
    {"short_scoreboard", "waiting for shared memory or special functions",
     "Reduce shared-memory bank conflicts and special functions (exp, "
     "rsqrt): pad shared arrays, use fast approximations where accuracy allows.",
     "tl.math.exp2(x * 1.4426950408889634)  # instead of exp"},
    {"mio_throttle", "the memory-input/output queue is full",
     "Fewer shared-memory or special instructions per element: vectorize "
     "shared-memory access, move work to registers.",
     ""},
    {"barrier", "warps wait at block barriers",
     "Balance work between warps of a block and use fewer __syncthreads / "
     "tl.debug_barrier; smaller blocks wait less.",
     "triton.Config({\"BLOCK_SIZE\": 128}, num_warps=4)"},
    {"membar", "warps wait at memory fences", "Use fewer memory fences and atomics.", ""},
    {"no_instructions", "the instruction cache misses",
     "Smaller code per kernel: less unrolling, fewer template variants in one launch.",
     ""},
    {"branch_resolving", "warps wait for branch targets",
     "Fewer divergent branches: predicate or restructure the condition.", ""},
    {"gmma", "waiting for warpgroup matrix operations",
     "The tensor cores are the limit: this GEMM is compute-bound as it should be; "
     "only lower precision (FP8) or less work helps.",
     ""},
};

const Advice* AdviceFor(const std::string& reason) {
  for (const Advice& advice : kAdvice) {
    if (advice.reason == reason) return &advice;
  }
  return nullptr;
}

}  // namespace

RuleOutcome CheckGpuStalls(const ProfileView& view, const Thresholds& t) {
  RuleOutcome outcome;
  const analysis::ProfileTree& tree = view.tree();
  if (!analysis::HasStallSamples(tree)) {
    outcome.skipped = "no GPU instruction samples (deepcontext run --gpu-samples)";
    return outcome;
  }
  const double gpu_total =
      view.metrics().gpu_time ? tree.Total(*view.metrics().gpu_time) : 0;
  for (const analysis::KernelStalls& kernel : analysis::SampledKernels(tree)) {
    if (kernel.samples < kMinKernelSamples || kernel.gpu_time <= 0) continue;
    if (gpu_total > 0 && kernel.gpu_time < kMinKernelShare * gpu_total) continue;
    const analysis::StallShare* dominant = nullptr;
    for (const analysis::StallShare& share : kernel.reasons) {
      if (!analysis::IsIssueReason(share.reason)) {
        dominant = &share;
        break;
      }
    }
    if (dominant == nullptr || dominant->share < kMinDominantShare) continue;
    const Advice* advice = AdviceFor(dominant->reason);
    if (advice == nullptr) continue;  // "not_selected", "misc": nothing to change
    // The stalled share of the kernel's time is what removing the stall
    // could save at most; a quarter of it is what a first fix usually gets.
    const double high = kernel.gpu_time * dominant->share;
    if (!WorthReporting(view, t, high)) continue;
    Finding f = MakeFinding(
        view, "gpu_stalls", kernel.kernel,
        std::string(advice->diagnosis) + " (" + dominant->reason + " in " +
            FormatPercent(dominant->share) + " of " + FormatCount(kernel.samples) +
            " samples)",
        high * 0.25, high,
        "kernel GPU time x share of samples stalled on the dominant reason; "
        "lower quarter since other stalls take over once it is removed");
    f.evidence.push_back({"kernel_gpu_time", kernel.gpu_time, "ns", ">=",
                          kMinKernelShare * gpu_total});
    f.evidence.push_back({"instruction_samples", kernel.samples, "count", ">=",
                          kMinKernelSamples});
    f.evidence.push_back({"stall_" + dominant->reason, dominant->share, "ratio", ">=",
                          kMinDominantShare});
    if (kernel.hottest_instruction != 0) {
      f.evidence.push_back({"hottest_instruction_share",
                            kernel.hottest_samples / kernel.samples, "ratio", "", 0});
    }
    f.suggestion = std::string(advice->suggestion);
    if (!dominant->meaning.empty()) {
      f.suggestion = dominant->reason + " means " + dominant->meaning + ". " + f.suggestion;
    }
    f.example = std::string(advice->example);
    outcome.findings.push_back(std::move(f));
  }
  return outcome;
}

}  // namespace deepcontext::analyzer
