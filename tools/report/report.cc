#include "tools/report/report.h"

#include <cctype>
#include <vector>

#include "tools/analysis/metric_selection.h"
#include "tools/analyzer/findings_text.h"
#include "tools/report/flat_section.h"
#include "tools/report/hotspot_section.h"
#include "tools/report/imbalance_section.h"
#include "tools/report/report_header.h"
#include "tools/report/section_context.h"
#include "tools/report/tree_sections.h"
#include "tools/report/value_format.h"

namespace deepcontext::report {

namespace {

constexpr struct {
  View view;
  const char* name;
} kViewNames[] = {{View::kTopDown, "top-down"},
                  {View::kBottomUp, "bottom-up"},
                  {View::kFlat, "flat"}};

// Names of the metrics whose total is nonzero, for the "no values" note.
std::string MetricsWithValues(const analysis::ProfileTree& tree) {
  std::string names;
  for (analysis::MetricIndex i = 0; i < tree.metrics().size(); ++i) {
    if (tree.Total(i) == 0) continue;
    names += (names.empty() ? "" : ", ") + tree.metrics()[i].name;
  }
  return names;
}

std::string MetricLine(const SectionContext& context) {
  const analysis::MetricInfo& info = context.tree.metrics()[context.metric];
  std::string line = "Metric:    " + info.name;
  if (!info.description.empty()) line += " (" + info.description + ")";
  line += ", total " + context.Value(context.total) + "\n";
  if (context.tree.metrics().size() > 1) {
    line += "Metrics:   " + analysis::AvailableMetrics(context.tree) +
            " (--metric NAME selects)\n";
  }
  return line;
}

std::string NoValuesMessage(const SectionContext& context) {
  std::string message = "No " + context.metric_name + " values in this profile";
  if (context.tree.HasSamples(context.metric)) {
    message += " (all samples are zero)";
  }
  message += ".";
  std::string others = MetricsWithValues(context.tree);
  if (!others.empty()) message += " Metrics with values: " + others + ".";
  return message + "\n";
}

}  // namespace

std::optional<View> ParseView(std::string_view name) {
  for (const auto& entry : kViewNames) {
    if (name == entry.name) return entry.view;
  }
  return std::nullopt;
}

const char* ViewName(View view) {
  for (const auto& entry : kViewNames) {
    if (view == entry.view) return entry.name;
  }
  return "top-down";
}

std::string RenderReport(const analysis::ProfileTree& tree,
                         const ReportOptions& options) {
  std::string out = (options.color ? "\x1b[1mDeepContext report\x1b[0m\n"
                                   : "DeepContext report\n") +
                    RenderSourceHeader(tree) +
                    analyzer::SummarizeFindings(tree, /*top=*/3);
  analysis::MetricLookup lookup = analysis::ResolveMetric(tree, options.metric);
  if (!lookup.ok) {
    std::string error = lookup.error;
    error[0] = static_cast<char>(std::toupper(error[0]));
    return out + "\n" + error + ".\n";
  }

  SectionContext context{tree, options};
  context.metric = lookup.metric;
  context.metric_name = tree.metrics()[lookup.metric].name;
  context.unit = tree.metrics()[lookup.metric].unit;
  context.total = tree.Total(lookup.metric);
  context.calls = tree.FindMetric("calls");
  out += MetricLine(context) + "\n";
  if (context.total == 0) return out + NoValuesMessage(context);

  switch (options.view) {
    case View::kTopDown:
      out += RenderTopDown(context);
      break;
    case View::kBottomUp:
      out += RenderBottomUp(context);
      break;
    case View::kFlat:
      out += RenderFlat(context);
      break;
  }
  std::string hotspots = RenderHotspots(context);
  if (!hotspots.empty()) out += "\n" + hotspots;
  std::string imbalance = RenderImbalance(context);
  if (!imbalance.empty()) out += "\n" + imbalance;
  return out;
}

}  // namespace deepcontext::report
