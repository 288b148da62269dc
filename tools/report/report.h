// The terminal report: a header describing the profile, one view of the
// calling context tree as an aligned table, and the top hotspots.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::report {

// Which view of the tree the report shows.
enum class View { kTopDown, kBottomUp, kFlat };

// Parses "top-down", "bottom-up" or "flat".
std::optional<View> ParseView(std::string_view name);

// Returns the name ParseView accepts for view.
const char* ViewName(View view);

// What to render and how.
struct ReportOptions {
  View view = View::kTopDown;
  // Metric name; empty selects analysis::DefaultMetric.
  std::string metric;
  // Deepest tree level shown (1 = top-level rows only); 0 = unlimited.
  int depth = 0;
  // Rows whose inclusive value is below this percentage of the total are
  // hidden (flat view: both inclusive and exclusive below it); 0 shows all.
  double min_percent = 1.0;
  // Number of hotspots listed after the view; 0 leaves the list out.
  int top = 10;
  // Maximum line width; names are shortened in the middle to fit.
  // 0 = unlimited.
  int width = 0;
  // Location columns show whole file paths instead of the package-relative
  // or last two components.
  bool full_paths = false;
  // Show every frame: torch's Module._call_impl / _wrapped_call_impl
  // wrappers and the profiler's own native frames are folded otherwise.
  bool all_frames = false;
  // ANSI bold for titles and table headers.
  bool color = false;
  // Unicode box-drawing tree guides; false uses plain ASCII.
  bool unicode = true;
};

// Renders the report of tree. Never throws for any tree: an unknown metric
// or a metric without values produces a report whose body says so (callers
// that want a distinct exit status resolve the metric first with
// analysis::ResolveMetric).
std::string RenderReport(const analysis::ProfileTree& tree,
                         const ReportOptions& options);

}  // namespace deepcontext::report
