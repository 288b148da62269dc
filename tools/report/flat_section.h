// The flat report view: one row per distinct frame.
#pragma once

#include <string>

#include "tools/report/section_context.h"

namespace deepcontext::report {

// Renders every distinct frame with its exclusive and (recursion-safe)
// inclusive totals, largest exclusive first; rows where both stay below
// min_percent of the total are hidden.
std::string RenderFlat(const SectionContext& context);

}  // namespace deepcontext::report
