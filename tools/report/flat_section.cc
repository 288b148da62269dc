#include "tools/report/flat_section.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tools/analysis/flat_view.h"
#include "tools/report/location.h"
#include "tools/report/name_shortening.h"
#include "tools/report/text_table.h"
#include "tools/report/value_format.h"

namespace deepcontext::report {

std::string RenderFlat(const SectionContext& context) {
  std::vector<analysis::FlatEntry> entries =
      analysis::Flat(context.tree, context.metric, context.calls);
  std::vector<TextTable::Column> columns = {
      {"Excl."}, {"%Excl."}, {"Inclusive"}, {"%Incl."}};
  if (context.calls) columns.push_back({"Calls"});
  const size_t name_column = columns.size();
  columns.push_back({"Name", TextTable::Align::kLeft, 0, 0, &ShortenName});
  columns.push_back(
      {"Location", TextTable::Align::kLeft, 0, 0, &ShortenLocation});
  TextTable table(columns);

  const double threshold = context.Threshold();
  size_t rows = 0;
  size_t hidden = 0;
  for (const analysis::FlatEntry& entry : entries) {
    double largest =
        std::max(std::fabs(entry.exclusive), std::fabs(entry.inclusive));
    if (context.options.min_percent > 0 &&
        (largest == 0 || largest < threshold)) {
      ++hidden;
      continue;
    }
    const analysis::Frame& frame = context.tree.frames()[entry.frame];
    if (IsFolded(frame, context.folding())) continue;
    std::vector<std::string> cells = {
        context.Value(entry.exclusive),
        FormatPercent(entry.exclusive, context.total),
        context.Value(entry.inclusive),
        FormatPercent(entry.inclusive, context.total)};
    if (context.calls) cells.push_back(context.Calls(entry.calls));
    cells.push_back(analysis::DisplayName(frame));
    cells.push_back(context.Location(frame));
    table.AddRow(std::move(cells));
    ++rows;
  }
  context.FitTable(table, name_column);

  std::string out = context.Title("Flat view (" + context.metric_name +
                                  " per distinct frame)") +
                    "\n";
  if (rows > 0) out += table.Render(context.options.color);
  if (hidden > 0) {
    out += '(';
    out += SectionContext::Counted(hidden, "frame");
    out += " below " + context.MinPercentText() +
           "% of the total not shown; --min-percent 0 shows all)\n";
  }
  return out;
}

}  // namespace deepcontext::report
