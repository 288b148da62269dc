#include "tools/export/timeline_export.h"

namespace deepcontext::exporter {

std::string WhyNoTimeline(const analysis::ProfileTree& tree) {
  bool windows = false;
  for (const analysis::SourceInfo& source : tree.sources()) {
    windows = windows || !source.Metadata("trace_windows").empty();
  }
  std::string reason =
      "the profile has no time axis: each calling context holds only "
      "aggregated values (count, sum, min, max), not timed events";
  if (windows) {
    reason += "; its trace windows are aggregated the same way (their "
              "count and coverage are in the metadata, not their times)";
  }
  return reason +
         ". Use --format pprof, hatchet or json for the calling context tree";
}

}  // namespace deepcontext::exporter
