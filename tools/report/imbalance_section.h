// The "Imbalance across ranks" section of the report of a merged multi-rank
// profile (deepcontext merge).
#pragma once

#include <string>

#include "tools/report/section_context.h"

namespace deepcontext::report {

// Renders the options.top contexts whose exclusive value of the chosen
// metric differs most between ranks, naming the slowest rank and the Python
// line leading there. Returns "" for profiles that are not merged ones, or
// when top is 0.
std::string RenderImbalance(const SectionContext& context);

}  // namespace deepcontext::report
