#include "tools/report/hotspot_section.h"

#include <vector>

#include "tools/analysis/hotspots.h"
#include "tools/report/location.h"
#include "tools/report/text_table.h"
#include "tools/report/value_format.h"

namespace deepcontext::report {

namespace {

// "forward (model.py:10)": the caller's name and where it is.
std::string CallerText(const analysis::Frame& frame) {
  std::string text = analysis::DisplayName(frame);
  std::string location = FormatLocation(frame);
  if (!location.empty()) text += " (" + location + ")";
  return text;
}

}  // namespace

std::string RenderHotspots(const SectionContext& context) {
  if (context.options.top <= 0) return "";
  std::vector<analysis::Hotspot> spots = analysis::Hotspots(
      context.tree, context.metric, static_cast<size_t>(context.options.top),
      context.calls);
  std::string out =
      context.Title("Top hotspots (exclusive " + context.metric_name + ")") +
      "\n";
  if (spots.empty()) {
    return out + "(no operator, kernel or code frame has exclusive " +
           context.metric_name + ")\n";
  }
  bool any_caller = false;
  for (const analysis::Hotspot& spot : spots) {
    any_caller = any_caller || spot.python_caller != analysis::kNoFrame;
  }

  std::vector<TextTable::Column> columns = {{"#"}, {"Excl."}, {"%Total"}};
  if (context.calls) columns.push_back({"Calls"});
  const size_t name_column = columns.size();
  columns.push_back({"Name", TextTable::Align::kLeft});
  columns.push_back({"Location", TextTable::Align::kLeft});
  if (any_caller) columns.push_back({"Mostly from", TextTable::Align::kLeft});
  TextTable table(columns);
  for (size_t i = 0; i < spots.size(); ++i) {
    const analysis::Hotspot& spot = spots[i];
    const analysis::Frame& frame = context.tree.frames()[spot.frame];
    std::vector<std::string> cells = {
        std::to_string(i + 1), context.Value(spot.exclusive),
        FormatPercent(spot.exclusive, context.total)};
    if (context.calls) cells.push_back(context.Calls(spot.calls));
    cells.push_back(analysis::DisplayName(frame));
    cells.push_back(FormatLocation(frame));
    if (spot.python_caller != analysis::kNoFrame) {
      cells.push_back(CallerText(context.tree.frames()[spot.python_caller]));
    }
    table.AddRow(std::move(cells));
  }
  table.FitToWidth(name_column, context.LineWidth());
  return out + table.Render(context.options.color);
}

}  // namespace deepcontext::report
