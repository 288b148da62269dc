// The "folded" export format: one line per calling context with its
// exclusive value, "frame;frame;frame value", as flamegraph.pl and inferno
// read it.
#pragma once

#include <string>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::exporter {

// Returns tree as folded stacks of its default metric
// (analysis::DefaultMetric), values rounded to integers as the tools
// expect; contexts whose rounded value is 0 are left out. Frames are
// DisplayName()s with ';' and line breaks replaced so that they cannot
// split a stack. Empty when the tree has no metrics. May throw
// std::bad_alloc.
std::string RenderFolded(const analysis::ProfileTree& tree);

}  // namespace deepcontext::exporter
