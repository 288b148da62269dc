// The Python line that launched a GPU kernel, for the report's kernel
// sections (stall reasons, hardware counters).
#pragma once

#include <string>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::report {

// Its nearest Python ancestor in the user's own code (a Triton kernel's
// nearest is Triton's launcher), else the nearest one, as
// "name (file:line)"; "" when the kernel has no Python ancestor.
std::string KernelLaunchLine(const analysis::ProfileTree& tree, analysis::NodeIndex node);

}  // namespace deepcontext::report
