#include "tools/analysis/stall_reasons.h"

#include <algorithm>
#include <optional>
#include <string_view>

namespace deepcontext::analysis {
namespace {

constexpr std::string_view kStallPrefix = "gpu_stall_";
// The runtime writes "GPU instruction samples: <meaning>".
constexpr std::string_view kMeaningPrefix = "GPU instruction samples: ";

}  // namespace

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
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    if (tree.frame_of(n).kind != format::FrameKind::kGpuKernel) continue;
    const double kernel_samples = tree.Inclusive(n, *samples);
    if (kernel_samples <= 0) continue;
    KernelStalls kernel;
    kernel.kernel = n;
    kernel.samples = kernel_samples;
    kernel.gpu_time = gpu_time ? tree.Inclusive(n, *gpu_time) : 0;
    for (const auto& [metric, templ] : stall_metrics) {
      const double value = tree.Inclusive(n, metric);
      if (value <= 0) continue;
      StallShare share = templ;
      share.samples = value;
      share.share = value / kernel_samples;
      kernel.reasons.push_back(share);
    }
    std::stable_sort(kernel.reasons.begin(), kernel.reasons.end(),
                     [](const StallShare& a, const StallShare& b) {
                       return a.samples > b.samples;
                     });
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
