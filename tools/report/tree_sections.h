// The tree-shaped report views: top-down (callees under callers) and
// bottom-up (callers under callees).
#pragma once

#include <string>

#include "tools/report/section_context.h"

namespace deepcontext::report {

// Renders the calling context tree, children sorted by inclusive value,
// pruned by depth and min_percent, with a note about what was hidden.
std::string RenderTopDown(const SectionContext& context);

// Renders the bottom-up tree: frames with exclusive value, each expanded
// into the callers it was reached through.
std::string RenderBottomUp(const SectionContext& context);

}  // namespace deepcontext::report
