// The lines at the top of a report that say what was profiled.
#pragma once

#include <string>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::report {

// Renders the profile files, command line, process (pid, host, rank),
// duration and framework versions found in the sources' metadata. Missing
// metadata is left out rather than shown as blanks.
std::string RenderSourceHeader(const analysis::ProfileTree& tree);

// Returns the run's wall duration in ns from the start_time_ns and
// end_time_ns metadata, or -1 when either is missing or malformed.
double DurationNs(const analysis::SourceInfo& source);

}  // namespace deepcontext::report
