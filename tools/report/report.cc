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
#include "tools/report/counter_section.h"
#include "tools/report/stall_section.h"
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

// The metric shown instead of one without values: the first one with a
// nonzero total, a call count only when nothing else has values (it says
// little about cost).
std::optional<analysis::MetricIndex> FallbackMetric(
    const analysis::ProfileTree& tree) {
  std::optional<analysis::MetricIndex> calls;
  for (analysis::MetricIndex i = 0; i < tree.metrics().size(); ++i) {
    if (tree.Total(i) == 0) continue;
    if (tree.metrics()[i].name != "calls") return i;
    calls = i;
  }
  return calls;
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

// Why a metric has no values, in a few words.
std::string WhyNoValues(const analysis::ProfileTree& tree,
                        analysis::MetricIndex metric) {
  if (tree.HasSamples(metric)) return "all its samples are zero";
  if (tree.metrics()[metric].name == "gpu_time")
    return "no GPU work was recorded";
  return "it was not recorded";
}

// One line saying why a profile in which no metric has values shows
// nothing.
std::string EmptyProfileMessage(const analysis::ProfileTree& tree) {
  for (analysis::MetricIndex i = 0; i < tree.metrics().size(); ++i) {
    if (tree.HasSamples(i)) {
      return "Every value in this profile is zero: the profiled work took no "
             "measurable time.\n";
    }
  }
  return "No samples in this profile: no operator, GPU work or CPU time was "
         "recorded (the program's work ran outside the profiled region, or "
         "the framework's operators were not intercepted: see any warning "
         "above).\n";
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
  StatusOr<analysis::MetricIndex> lookup =
      analysis::ResolveMetric(tree, options.metric);
  if (!lookup.ok()) {
    std::string error = lookup.status().message();
    error[0] = static_cast<char>(std::toupper(error[0]));
    return out + "\n" + error + ".\n";
  }
  analysis::MetricIndex metric = *lookup;

  std::string note;
  if (tree.Total(metric) == 0) {
    // A report that only says "no values" helps nobody when another metric
    // has them: show that one, and say so.
    std::optional<analysis::MetricIndex> fallback = FallbackMetric(tree);
    if (!fallback) return out + "\n" + EmptyProfileMessage(tree);
    note = "Note:      no " + tree.metrics()[metric].name +
           " values in this profile (" + WhyNoValues(tree, metric) +
           "); showing " + tree.metrics()[*fallback].name + "\n";
    metric = *fallback;
  }

  SectionContext context{tree, options};
  context.SelectMetric(metric);
  context.calls = tree.FindMetric("calls");
  out += note + MetricLine(context) + "\n";

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
  std::string stalls = RenderStallReasons(context);
  if (!stalls.empty()) out += "\n" + stalls;
  std::string counters = RenderKernelCounters(context);
  if (!counters.empty()) out += "\n" + counters;
  return out;
}

}  // namespace deepcontext::report
