#include "tools/report/stall_section.h"

#include <cstdio>
#include <set>
#include <vector>

#include "tools/analysis/stall_reasons.h"
#include "tools/report/launch_line.h"
#include "tools/report/text_table.h"
#include "tools/report/value_format.h"

namespace deepcontext::report {
namespace {

constexpr size_t kReasonsShown = 3;

std::string Percent(double share) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.0f%%", 100.0 * share);
  return text;
}

}  // namespace

std::string RenderStallReasons(const SectionContext& context) {
  if (context.options.top <= 0 || !analysis::HasStallSamples(context.tree)) return "";
  const analysis::ProfileTree& tree = context.tree;
  std::vector<analysis::KernelStalls> kernels = analysis::SampledKernels(tree);
  if (kernels.size() > static_cast<size_t>(context.options.top)) {
    kernels.resize(static_cast<size_t>(context.options.top));
  }
  std::string out =
      context.Title("GPU stall reasons (instruction samples of the hottest kernels)") + "\n";
  TextTable table({{"#"},
                   {"GPU time"},
                   {"Samples"},
                   {"Stall reasons", TextTable::Align::kLeft},
                   {"Hottest pc", TextTable::Align::kLeft},
                   {"Kernel", TextTable::Align::kLeft},
                   {"Launched at", TextTable::Align::kLeft}});
  std::vector<const analysis::StallShare*> dominant;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const analysis::KernelStalls& kernel = kernels[i];
    std::string reasons;
    for (size_t r = 0; r < kernel.reasons.size() && r < kReasonsShown; ++r) {
      if (!reasons.empty()) reasons += ", ";
      reasons += kernel.reasons[r].reason + " " + Percent(kernel.reasons[r].share);
    }
    std::string hottest;
    if (kernel.hottest_instruction != 0) {
      hottest = tree.frame_of(kernel.hottest_instruction).name + " (" +
                Percent(kernel.hottest_samples / kernel.samples) + ")";
    }
    table.AddRow({std::to_string(i + 1),
                  kernel.gpu_time > 0 ? FormatValue(kernel.gpu_time, "ns") : "-",
                  FormatCount(kernel.samples), reasons, hottest,
                  analysis::DisplayName(tree.frame_of(kernel.kernel)),
                  KernelLaunchLine(tree, kernel.kernel)});
    // The first reason that is a stall (not issuing) is the one to explain.
    for (const analysis::StallShare& share : kernel.reasons) {
      if (!analysis::IsIssueReason(share.reason)) {
        dominant.push_back(&share);
        break;
      }
    }
  }
  context.FitTable(table, 5, 6);
  out += table.Render();
  std::set<std::string> explained;
  for (const analysis::StallShare* share : dominant) {
    if (share->meaning.empty() || !explained.insert(share->reason).second) continue;
    out += "  " + share->reason + ": " + share->meaning + "\n";
  }
  return out;
}

}  // namespace deepcontext::report
