#include "tools/report/stall_section.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>
#include <vector>

#include "tools/analysis/stall_reasons.h"
#include "tools/report/location.h"
#include "tools/report/text_table.h"
#include "tools/report/value_format.h"
#include "tools/sass/instruction_sass.h"

namespace deepcontext::report {
namespace {

constexpr size_t kReasonsShown = 3;
constexpr size_t kInstructionsShown = 10;
constexpr size_t kInstructionReasonsShown = 2;

std::string Percent(double share) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.0f%%", 100.0 * share);
  return text;
}

// The Python line that launched the kernel: its nearest Python ancestor in
// the user's own code (a Triton kernel's nearest is Triton's launcher),
// else the nearest one.
std::string LaunchLine(const analysis::ProfileTree& tree, analysis::NodeIndex node) {
  analysis::NodeIndex chosen = analysis::ProfileTree::kRootNode;
  while (node != analysis::ProfileTree::kRootNode) {
    node = tree.node(node).parent;
    const analysis::Frame& frame = tree.frame_of(node);
    if (frame.kind != format::FrameKind::kPythonFrame) continue;
    if (chosen == analysis::ProfileTree::kRootNode) chosen = node;
    if (!analysis::IsLibraryFile(frame.file)) {
      chosen = node;
      break;
    }
  }
  if (chosen == analysis::ProfileTree::kRootNode) return "";
  const analysis::Frame& frame = tree.frame_of(chosen);
  std::string text = analysis::DisplayName(frame);
  const std::string location = FormatLocation(frame);
  return location.empty() ? text : text + " (" + location + ")";
}

std::string ReasonList(const std::vector<analysis::StallShare>& reasons, size_t count) {
  std::string text;
  for (size_t r = 0; r < reasons.size() && r < count; ++r) {
    if (!text.empty()) text += ", ";
    text += reasons[r].reason + " " + Percent(reasons[r].share);
  }
  return text;
}

// The hottest instructions over all kernels, with their SASS text when
// the profile's cubins were disassembled (tools/sass) and their source
// line; either column only when some instruction has one.
std::string RenderHottestInstructions(const SectionContext& context) {
  const analysis::ProfileTree& tree = context.tree;
  const std::vector<analysis::InstructionStalls> hottest = analysis::HottestInstructions(
      tree, std::min(kInstructionsShown, static_cast<size_t>(context.options.top)));
  bool any_sass = false;
  bool any_line = false;
  for (const analysis::InstructionStalls& instruction : hottest) {
    const analysis::Frame& frame = tree.frame_of(instruction.instruction);
    any_sass |= !sass::SplitInstructionLabel(frame.name).sass.empty();
    any_line |= !context.Location(frame).empty();
  }
  std::vector<TextTable::Column> columns = {{"#"},
                                            {"Samples"},
                                            {"Of kernel"},
                                            {"Stall reasons", TextTable::Align::kLeft},
                                            {"Instruction", TextTable::Align::kLeft}};
  if (any_sass) columns.push_back({"SASS", TextTable::Align::kLeft});
  const size_t kernel_column = columns.size();
  columns.push_back({"Kernel", TextTable::Align::kLeft});
  if (any_line) columns.push_back({"Source", TextTable::Align::kLeft});
  TextTable table(columns);
  for (size_t i = 0; i < hottest.size(); ++i) {
    const analysis::InstructionStalls& instruction = hottest[i];
    const analysis::Frame& frame = tree.frame_of(instruction.instruction);
    const sass::InstructionLabel label = sass::SplitInstructionLabel(frame.name);
    std::vector<std::string> row = {std::to_string(i + 1), FormatCount(instruction.samples),
                                    Percent(instruction.kernel_share),
                                    ReasonList(instruction.reasons, kInstructionReasonsShown),
                                    label.pc};
    if (any_sass) row.push_back(label.sass.empty() ? "-" : label.sass);
    row.push_back(analysis::DisplayName(tree.frame_of(instruction.kernel)));
    if (any_line) {
      const std::string location = context.Location(frame);
      row.push_back(location.empty() ? "-" : location);
    }
    table.AddRow(std::move(row));
  }
  context.FitTable(table, kernel_column,
                   any_sass ? std::optional<size_t>(kernel_column - 1) : std::nullopt);
  return context.Title("Hottest instructions (samples, share of their kernel's)") + "\n" +
         table.Render();
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
                  LaunchLine(tree, kernel.kernel)});
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
  out += RenderHottestInstructions(context);
  return out;
}

}  // namespace deepcontext::report
