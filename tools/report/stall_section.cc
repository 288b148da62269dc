#include "tools/report/stall_section.h"

#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "tools/analysis/stall_reasons.h"
#include "tools/report/launch_line.h"
#include "tools/report/text_table.h"
#include "tools/report/value_format.h"
#include "tools/sass/instruction_sass.h"

namespace deepcontext::report {
namespace {

constexpr size_t kReasonsShown = 3;
constexpr size_t kInstructionsShown = 10;

std::string Percent(double share) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.0f%%", 100.0 * share);
  return text;
}

std::string ReasonList(const std::vector<analysis::StallShare>& reasons, size_t count) {
  std::string text;
  for (size_t r = 0; r < reasons.size() && r < count; ++r) {
    if (!text.empty()) text += ", ";
    text += reasons[r].reason + " " + Percent(reasons[r].share);
  }
  return text;
}

// "pc 0x00f0  FFMA R11, R11, R0, 1": the offset, and the SASS text when
// the profile's cubins were disassembled (tools/sass).
std::string InstructionText(const analysis::Frame& frame) {
  const sass::InstructionLabel label = sass::SplitInstructionLabel(frame.name);
  return label.sass.empty() ? label.pc : label.pc + "  " + label.sass;
}

// The hottest instructions of the kernels listed (`kernels`, in table
// order): the kernel's number there, the dominant reason, the SASS and
// the source line (that column only when some instruction has one).
std::string RenderHottestInstructions(const SectionContext& context,
                                      const std::vector<analysis::KernelStalls>& kernels) {
  const analysis::ProfileTree& tree = context.tree;
  std::map<analysis::NodeIndex, size_t> kernel_number;
  for (size_t i = 0; i < kernels.size(); ++i) kernel_number[kernels[i].kernel] = i + 1;
  const std::vector<analysis::InstructionStalls> hottest = analysis::HottestInstructions(
      tree, kInstructionsShown,
      [&](analysis::NodeIndex kernel) { return kernel_number.count(kernel) != 0; });
  bool any_line = false;
  for (const analysis::InstructionStalls& instruction : hottest) {
    any_line |= !context.Location(tree.frame_of(instruction.instruction)).empty();
  }
  enum : size_t { kReason = 4, kInstruction = 5, kSource = 6 };
  std::vector<TextTable::Column> columns = {{"#"},
                                            {"K"},
                                            {"Samples"},
                                            {"Share"},
                                            {"Top stall", TextTable::Align::kLeft},
                                            {"Instruction", TextTable::Align::kLeft}};
  if (any_line) columns.push_back({"Source", TextTable::Align::kLeft});
  TextTable table(columns);
  for (size_t i = 0; i < hottest.size(); ++i) {
    const analysis::InstructionStalls& instruction = hottest[i];
    const analysis::Frame& frame = tree.frame_of(instruction.instruction);
    std::vector<std::string> row = {std::to_string(i + 1),
                                    std::to_string(kernel_number[instruction.kernel]),
                                    FormatCount(instruction.samples),
                                    Percent(instruction.kernel_share),
                                    ReasonList(instruction.reasons, 1), InstructionText(frame)};
    if (any_line) {
      const std::string location = context.Location(frame);
      row.push_back(location.empty() ? "-" : location);
    }
    table.AddRow(std::move(row));
  }
  // The instruction text is what this table is for: it gives way last.
  table.FitToWidth(context.LineWidth(),
                   {{kSource, 16}, {kReason, 16}, {kInstruction, 40}, {kSource, 12}});
  return context.Title(
             "Hottest instructions (K: kernel # above; share of its samples)") +
         "\n" + table.Render();
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
    const std::string reasons = ReasonList(kernel.reasons, kReasonsShown);
    std::string hottest;
    if (kernel.hottest_instruction != 0) {
      // The offset only: the SASS text is in the instruction table below.
      hottest = sass::SplitInstructionLabel(tree.frame_of(kernel.hottest_instruction).name).pc +
                " (" +
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
  out += RenderHottestInstructions(context, kernels);
  return out;
}

}  // namespace deepcontext::report
