#include "tools/report/hotspot_section.h"

#include <vector>

#include "tools/analysis/hotspots.h"
#include "tools/report/location.h"
#include "tools/report/name_shortening.h"
#include "tools/report/text_table.h"
#include "tools/report/value_format.h"

namespace deepcontext::report {

namespace {

// "forward (model.py:10)": the caller's name and where it is.
std::string CallerText(const SectionContext& context,
                       const analysis::Frame& frame) {
  std::string text = analysis::DisplayName(frame);
  std::string location = context.Location(frame);
  if (!location.empty()) text += " (" + location + ")";
  return text;
}

}  // namespace

std::string RenderHotspots(const SectionContext& context) {
  if (context.options.top <= 0) return "";
  const size_t top = static_cast<size_t>(context.options.top);
  // Folded frames (wrappers, the profiler's own) are left out of the list;
  // they are few, so asking for that many more keeps it full.
  size_t folded = 0;
  for (const analysis::Frame& frame : context.tree.frames()) {
    if (IsFolded(frame, context.folding())) ++folded;
  }
  std::vector<analysis::Hotspot> spots = analysis::Hotspots(
      context.tree, context.metric, top + folded, context.calls);
  std::erase_if(spots, [&](const analysis::Hotspot& spot) {
    return IsFolded(context.tree.frames()[spot.frame], context.folding());
  });
  if (spots.size() > top) spots.resize(top);
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
  columns.push_back({"Name", TextTable::Align::kLeft, 0, 0, &ShortenName});
  columns.push_back(
      {"Location", TextTable::Align::kLeft, 0, 0, &ShortenLocation});
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
    cells.push_back(context.Location(frame));
    if (spot.python_caller != analysis::kNoFrame) {
      cells.push_back(
          CallerText(context, context.tree.frames()[spot.python_caller]));
    }
    table.AddRow(std::move(cells));
  }
  context.FitTable(table, name_column,
                   any_caller ? std::optional<size_t>(name_column + 2)
                              : std::nullopt);
  return out + table.Render(context.options.color);
}

}  // namespace deepcontext::report
