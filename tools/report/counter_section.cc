#include "tools/report/counter_section.h"

#include <cstdio>
#include <vector>

#include "tools/analysis/kernel_counters.h"
#include "tools/report/launch_line.h"
#include "tools/report/text_table.h"
#include "tools/report/value_format.h"

namespace deepcontext::report {
namespace {

// A unit at this share of its peak is what limits the kernel; below this
// for both SM and DRAM, neither is: latency (too few warps, dependencies).
constexpr double kNearPeakPct = 60;
constexpr double kLowPct = 40;

std::string Percent(const std::optional<double>& value) {
  if (!value) return "-";
  char text[16];
  std::snprintf(text, sizeof(text), "%.0f%%", *value);
  return text;
}

std::string Limiter(const analysis::KernelCounters& kernel) {
  const double sm = kernel.sm_pct.value_or(0);
  const double dram = kernel.dram_pct.value_or(0);
  if (dram >= kNearPeakPct && dram >= sm) return "memory";
  if (sm >= kNearPeakPct) return "compute";
  // Neither near its peak: waiting, on memory when DRAM is the busier.
  if (sm < kLowPct && dram < kLowPct) return dram >= sm ? "mem latency" : "latency";
  return dram > sm ? "memory?" : "compute?";
}

// The kernel's GPU time over its timed launches; "untimed" when CUPTI
// timed none of them (every launch was measured, so replayed).
std::string GpuTimeCell(const analysis::KernelCounters& kernel) {
  if (kernel.gpu_time > 0) return FormatValue(kernel.gpu_time, "ns");
  if (kernel.timed_launches == 0 && kernel.untimed_launches > 0) return "untimed";
  return "-";
}

}  // namespace

std::string RenderKernelCounters(const SectionContext& context) {
  if (context.options.top <= 0 || !analysis::HasKernelCounters(context.tree)) return "";
  const analysis::ProfileTree& tree = context.tree;
  std::vector<analysis::KernelCounters> kernels = analysis::MeasuredKernels(tree);
  if (kernels.size() > static_cast<size_t>(context.options.top)) {
    kernels.resize(static_cast<size_t>(context.options.top));
  }
  std::string out =
      context.Title("GPU hardware counters (measured launches of the hottest kernels)") + "\n";
  TextTable table({{"#"},
                   {"GPU time"},
                   {"Timed"},
                   {"Measured"},
                   {"Occupancy"},
                   {"SM"},
                   {"DRAM"},
                   {"Tensor"},
                   {"Limit", TextTable::Align::kLeft},
                   {"Kernel", TextTable::Align::kLeft},
                   {"Launched at", TextTable::Align::kLeft}});
  for (size_t i = 0; i < kernels.size(); ++i) {
    const analysis::KernelCounters& kernel = kernels[i];
    std::optional<double> occupancy;
    if (kernel.occupancy) occupancy = *kernel.occupancy * 100.0;
    table.AddRow({std::to_string(i + 1),
                  GpuTimeCell(kernel), FormatCount(static_cast<double>(kernel.timed_launches)),
                  FormatCount(static_cast<double>(kernel.launches)), Percent(occupancy),
                  Percent(kernel.sm_pct), Percent(kernel.dram_pct),
                  Percent(kernel.tensor_pipe_pct), Limiter(kernel),
                  analysis::DisplayName(tree.frame_of(kernel.kernel)),
                  KernelLaunchLine(tree, kernel.kernel)});
  }
  context.FitTable(table, 9, 10);
  out += table.Render();
  out += "  GPU time: over the Timed launches. CUPTI gives no time to the Measured "
         "launches (each ran replayed, once per counter pass), so they are left out of "
         "gpu_time; untimed: every launch was measured, see a run without --gpu-metrics.\n";
  out += "  SM, DRAM: share of peak sustained throughput while the kernel ran; Tensor: share "
         "of cycles the tensor pipe was active; Limit: memory or compute at >= 60% of peak, "
         "latency when both are below 40% (mem latency: waiting on memory without using its bandwidth).\n";
  return out;
}

}  // namespace deepcontext::report
