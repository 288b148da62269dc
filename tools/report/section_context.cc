#include "tools/report/section_context.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include "tools/report/location.h"
#include "tools/report/value_format.h"

namespace deepcontext::report {

void SectionContext::SelectMetric(analysis::MetricIndex chosen) {
  metric = chosen;
  metric_name = tree.metrics()[chosen].name;
  unit = tree.metrics()[chosen].unit;
  total = tree.Total(chosen);
}

std::string SectionContext::Value(double value) const {
  return FormatValue(value, unit);
}

std::string SectionContext::Calls(double calls) const {
  return calls == 0 ? "-" : FormatCount(calls);
}

std::string SectionContext::Counted(size_t count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

double SectionContext::Threshold() const {
  return std::fabs(total) * options.min_percent / 100.0;
}

std::string SectionContext::MinPercentText() const {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", options.min_percent);
  return buffer;
}

size_t SectionContext::LineWidth() const {
  return options.width > 0 ? static_cast<size_t>(options.width) : 0;
}

std::string SectionContext::Title(const std::string& text) const {
  return options.color ? "\x1b[1m" + text + "\x1b[0m" : text;
}

std::string SectionContext::Location(const analysis::Frame& frame) const {
  return FormatLocation(frame, options.full_paths);
}

void SectionContext::FitTable(TextTable& table, size_t name_column,
                              std::optional<size_t> extra_column) const {
  std::vector<TextTable::Shrink> steps;
  if (extra_column) steps.push_back({*extra_column, 30});
  // A location keeps a typical "file.py:line" (about 20 columns) longer
  // than a name keeps room beyond its tree guide.
  steps.push_back({name_column + 1, 28});
  steps.push_back({name_column, 48});
  steps.push_back({name_column + 1, 20});
  steps.push_back({name_column, 32});
  steps.push_back({name_column + 1, 16});
  steps.push_back({name_column, TextTable::kMinShownText});
  if (extra_column) steps.push_back({*extra_column, 16});
  table.FitToWidth(LineWidth(), steps);
}

Folding SectionContext::folding() const {
  return options.all_frames ? Folding::kNone : Folding::kDefault;
}

}  // namespace deepcontext::report
