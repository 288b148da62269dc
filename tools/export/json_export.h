// The "json" export format: the whole calling context tree with every
// metric, in a stable schema meant for scripts and notebooks.
#pragma once

#include <string>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::exporter {

// Value of the document's "format" key.
inline constexpr const char* kJsonFormatName = "deepcontext-json";

// Value of the document's "version" key. Bumped only when a key changes
// meaning or disappears; new keys may appear without a bump.
inline constexpr int kJsonFormatVersion = 1;

// Returns tree as one JSON document:
//   {"format": "deepcontext-json", "version": 1,
//    "sources": [{"path": ..., "metadata": {key: value, ...}}, ...],
//    "metrics": [{"name": ..., "unit": ..., "description": ...}, ...],
//    "nodes": [{"id": 0, "parent": null, "kind": "root", "name": "",
//               "file": "", "line": 0, "children": [1, 2],
//               "exclusive": {metric: {"sum", "count", "min", "max"}},
//               "inclusive": {metric: value}}, ...]}
// Node ids are tree indices, so a parent always precedes its children.
// "exclusive" lists only metrics sampled at the node (count > 0) and
// "inclusive" only metrics with a nonzero subtree value. Strings that are
// not valid UTF-8 have the offending bytes replaced by U+FFFD. Each node is
// on its own line so that large exports stay greppable. May throw
// std::bad_alloc.
std::string RenderJson(const analysis::ProfileTree& tree);

}  // namespace deepcontext::exporter
