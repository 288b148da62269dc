// The "Top hotspots" list that closes every report.
#pragma once

#include <string>

#include "tools/report/section_context.h"

namespace deepcontext::report {

// Renders the options.top frames with the largest exclusive value, each
// with the Python line it is mostly reached from. Returns "" when top is 0.
std::string RenderHotspots(const SectionContext& context);

}  // namespace deepcontext::report
