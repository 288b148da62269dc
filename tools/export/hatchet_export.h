// The "hatchet" export format: the tree as a hatchet literal (a JSON list
// of nested node dictionaries), which hatchet's
// GraphFrame.from_literal / Thicket and Proton's viewers load.
#pragma once

#include <string>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::exporter {

// Returns [root] where every node is
//   {"frame": {"name": ..., "type": <frame kind>[, "file": ..., "line": N]},
//    "metrics": {"<metric>": exclusive, "<metric> (inc)": inclusive, ...},
//    "children": [...]}   (children left out at leaves)
// Every node carries every metric (hatchet reads the metric names off the
// nodes), exclusive values under the metric's name and inclusive ones
// under "<name> (inc)", hatchet's convention. The per-rank companion
// metrics of merged profiles are left out. May throw std::bad_alloc.
std::string RenderHatchet(const analysis::ProfileTree& tree);

}  // namespace deepcontext::exporter
