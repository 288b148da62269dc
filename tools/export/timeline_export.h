// Timeline formats (Chrome trace / Perfetto JSON) need events with start
// times and durations. A .dctx 1.0 profile aggregates every context online
// into count / sum / min / max, trace windows included, so it holds no
// time axis; asking for a timeline explains this instead of inventing one.
#pragma once

#include <string>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::exporter {

// Returns why tree cannot be written as a timeline: always a reason for
// .dctx 1.0 profiles, naming what the profile does hold.
std::string WhyNoTimeline(const analysis::ProfileTree& tree);

}  // namespace deepcontext::exporter
