#include "tools/analysis/stall_reasons.h"

#include <algorithm>
#include <optional>
#include <string_view>

namespace deepcontext::analysis {
namespace {

constexpr std::string_view kStallPrefix = "gpu_stall_";
// The runtime writes "GPU instruction samples: <meaning>".
constexpr std::string_view kMeaningPrefix = "GPU instruction samples: ";

// Every gpu_stall_<reason> metric with its reason and meaning.
std::vector<std::pair<MetricIndex, StallShare>> StallMetrics(const ProfileTree& tree) {
  std::vector<std::pair<MetricIndex, StallShare>> stall_metrics;
  for (MetricIndex m = 0; m < tree.metrics().size(); ++m) {
    const MetricInfo& info = tree.metrics()[m];
    if (!info.name.starts_with(kStallPrefix)) continue;
    StallShare share;
    share.reason = info.name.substr(kStallPrefix.size());
    if (info.description.starts_with(kMeaningPrefix)) {
      share.meaning = info.description.substr(kMeaningPrefix.size());
    }
    stall_metrics.emplace_back(m, share);
  }
  return stall_metrics;
}

// The reasons of `node`'s samples, most first, shares of `samples`.
std::vector<StallShare> Reasons(const ProfileTree& tree, NodeIndex node, double samples,
                                const std::vector<std::pair<MetricIndex, StallShare>>& metrics) {
  std::vector<StallShare> reasons;
  for (const auto& [metric, templ] : metrics) {
    const double value = tree.Inclusive(node, metric);
    if (value <= 0) continue;
    StallShare share = templ;
    share.samples = value;
    share.share = value / samples;
    reasons.push_back(share);
  }
  std::stable_sort(reasons.begin(), reasons.end(), [](const StallShare& a, const StallShare& b) {
    return a.samples > b.samples;
  });
  return reasons;
}

}  // namespace

std::vector<InstructionStalls> HottestInstructions(
    const ProfileTree& tree, size_t limit,
    const std::function<bool(NodeIndex kernel)>& keep_kernel) {
  std::vector<InstructionStalls> out;
  const std::optional<MetricIndex> samples = tree.FindMetric("gpu_samples");
  if (!samples || limit == 0) return out;
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    if (tree.frame_of(n).kind != format::FrameKind::kGpuInstruction) continue;
    if (keep_kernel && !keep_kernel(tree.node(n).parent)) continue;
    const double value = tree.Inclusive(n, *samples);
    if (value <= 0) continue;
    InstructionStalls instruction;
    instruction.instruction = n;
    instruction.kernel = tree.node(n).parent;
    instruction.samples = value;
    const double kernel_samples = tree.Inclusive(instruction.kernel, *samples);
    instruction.kernel_share = kernel_samples > 0 ? value / kernel_samples : 0;
    out.push_back(std::move(instruction));
  }
  std::stable_sort(out.begin(), out.end(), [](const InstructionStalls& a,
                                              const InstructionStalls& b) {
    return a.samples > b.samples;
  });
  if (out.size() > limit) out.resize(limit);
  const auto metrics = StallMetrics(tree);
  for (InstructionStalls& instruction : out) {
    instruction.reasons = Reasons(tree, instruction.instruction, instruction.samples, metrics);
  }
  return out;
}

bool HasStallSamples(const ProfileTree& tree) {
  const std::optional<MetricIndex> samples = tree.FindMetric("gpu_samples");
  return samples && tree.Total(*samples) > 0;
}

bool IsIssueReason(const std::string& reason) { return reason == "selected"; }

std::vector<KernelStalls> SampledKernels(const ProfileTree& tree) {
  std::vector<KernelStalls> out;
  const std::optional<MetricIndex> samples = tree.FindMetric("gpu_samples");
  if (!samples) return out;
  const std::optional<MetricIndex> gpu_time = tree.FindMetric("gpu_time");
  const auto stall_metrics = StallMetrics(tree);
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    if (tree.frame_of(n).kind != format::FrameKind::kGpuKernel) continue;
    const double kernel_samples = tree.Inclusive(n, *samples);
    if (kernel_samples <= 0) continue;
    KernelStalls kernel;
    kernel.kernel = n;
    kernel.samples = kernel_samples;
    kernel.gpu_time = gpu_time ? tree.Inclusive(n, *gpu_time) : 0;
    kernel.reasons = Reasons(tree, n, kernel_samples, stall_metrics);
    for (NodeIndex child : tree.node(n).children) {
      if (tree.frame_of(child).kind != format::FrameKind::kGpuInstruction) continue;
      const double value = tree.Inclusive(child, *samples);
      if (value > kernel.hottest_samples) {
        kernel.hottest_samples = value;
        kernel.hottest_instruction = child;
      }
    }
    out.push_back(std::move(kernel));
  }
  std::stable_sort(out.begin(), out.end(), [](const KernelStalls& a, const KernelStalls& b) {
    if (a.gpu_time != b.gpu_time) return a.gpu_time > b.gpu_time;
    return a.samples > b.samples;
  });
  return out;
}

}  // namespace deepcontext::analysis
