// Findings as text for the terminal: `deepcontext analyze` and the summary
// under `deepcontext report`'s header.
#pragma once

#include <string>

#include "tools/analysis/profile_tree.h"
#include "tools/analyzer/analyzer.h"

namespace deepcontext::analyzer {

// The full listing: each finding with its context, evidence, benefit and
// suggestion; then which rules could not check. top = 0 lists all.
std::string RenderFindingsText(const Analysis& analysis, size_t top = 0);

// One line per finding, at most top of them, under a "Findings:" title;
// "" when there is none. This is what `deepcontext report` shows.
std::string RenderFindingsSummary(const Analysis& analysis, size_t top);

// Runs the built-in rules on tree and returns RenderFindingsSummary.
std::string SummarizeFindings(const analysis::ProfileTree& tree,
                              size_t top = 3);

}  // namespace deepcontext::analyzer
