// What every part of a report needs to know, resolved once by RenderReport.
#pragma once

#include <optional>
#include <string>

#include "tools/analysis/profile_tree.h"
#include "tools/report/folded_tree.h"
#include "tools/report/report.h"
#include "tools/report/text_table.h"

namespace deepcontext::report {

// The tree, the chosen metric and the options, shared by the report parts.
struct SectionContext {
  const analysis::ProfileTree& tree;
  const ReportOptions& options;
  analysis::MetricIndex metric = 0;
  std::string metric_name;
  std::string unit;
  double total = 0;
  // The "calls" metric when the tree has one; fills the Calls columns.
  std::optional<analysis::MetricIndex> calls;

  // Makes `chosen` the metric the sections show: its index, name, unit
  // and total in the tree.
  void SelectMetric(analysis::MetricIndex chosen);

  // Formats a value of the chosen metric.
  std::string Value(double value) const;

  // Formats a "calls" value; "-" for zero, which mostly means "not
  // counted" (Python frames) rather than "never called".
  std::string Calls(double calls) const;

  // Returns the value below which rows are pruned.
  double Threshold() const;

  // Returns "1 node" or "3 nodes": count followed by the noun, pluralized.
  static std::string Counted(size_t count, const std::string& noun);

  // Returns min_percent for notes, e.g. "1" or "0.5".
  std::string MinPercentText() const;

  // Returns the requested line width, 0 when unlimited.
  size_t LineWidth() const;

  // Wraps a title line in ANSI bold when color is on.
  std::string Title(const std::string& text) const;

  // The frame's location as the options ask for.
  std::string Location(const analysis::Frame& frame) const;

  // Which frames the views fold.
  Folding folding() const;

  // Fits table into the line width: the Location column (after
  // name_column) gives up room first, then the Name column, then both
  // again, each to a floor that keeps it readable. extra_column (e.g.
  // "Mostly from") shrinks before all of them.
  void FitTable(TextTable& table, size_t name_column,
                std::optional<size_t> extra_column = std::nullopt) const;
};

}  // namespace deepcontext::report
