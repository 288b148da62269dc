#include "tools/report/imbalance_section.h"

#include <optional>
#include <vector>

#include "tools/merge/imbalance.h"
#include "tools/report/location.h"
#include "tools/report/text_table.h"
#include "tools/report/value_format.h"

namespace deepcontext::report {

namespace {

// "train (train.py:42)": the Python function and its line.
std::string LineText(const analysis::ProfileTree& tree,
                     std::optional<analysis::NodeIndex> node) {
  if (!node) return "";
  const analysis::Frame& frame = tree.frame_of(*node);
  std::string text = analysis::DisplayName(frame);
  std::string location = FormatLocation(frame);
  if (!location.empty()) text += " (" + location + ")";
  return text;
}

}  // namespace

std::string RenderImbalance(const SectionContext& context) {
  if (context.options.top <= 0) return "";
  std::optional<merge::ImbalanceView> view = merge::FindImbalance(
      context.tree, context.metric, static_cast<size_t>(context.options.top));
  if (!view) return "";
  std::string out =
      context.Title("Imbalance across " + std::to_string(view->ranks) +
                    " ranks (exclusive " + context.metric_name +
                    "; slowest rank minus median)") +
      "\n";
  if (view->contexts.empty()) {
    return out + "(every context has the same " + context.metric_name +
           " on every rank)\n";
  }
  std::vector<TextTable::Column> columns = {
      {"#"},      {"Excess"}, {"Slowest"}, {"Max"},
      {"Median"}, {"Min"},    {"Ranks"},   {"Name", TextTable::Align::kLeft},
      {"Line", TextTable::Align::kLeft}};
  const size_t name_column = 7;
  TextTable table(columns);
  for (size_t i = 0; i < view->contexts.size(); ++i) {
    const merge::ImbalancedContext& entry = view->contexts[i];
    const analysis::Frame& frame = context.tree.frame_of(entry.node);
    std::string name = analysis::DisplayName(frame);
    // A Python frame is its own line; other frames name theirs if known.
    std::string line = LineText(context.tree, entry.python_line);
    if (entry.python_line == entry.node) {
      line = FormatLocation(frame);
    }
    table.AddRow({std::to_string(i + 1), context.Value(entry.Excess()),
                  "rank " + std::to_string(entry.slowest_rank),
                  context.Value(entry.max), context.Value(entry.median),
                  context.Value(entry.min),
                  std::to_string(entry.ranks_with_context) + "/" +
                      std::to_string(view->ranks),
                  name, line});
  }
  table.FitToWidth(name_column, context.LineWidth());
  return out + table.Render(context.options.color);
}

}  // namespace deepcontext::report
