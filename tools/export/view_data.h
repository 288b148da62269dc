// The profile data the viewer (web/) reads: one calling context tree in a
// columnar JSON document, shared by `deepcontext view`'s API and the
// single-file HTML export so that both feed the front end the same bytes.
#pragma once

#include <string>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::exporter {

// Value of the document's "format" key.
inline constexpr const char* kViewDataFormatName = "deepcontext-view";

// Value of the document's "version" key; bumped when a key changes meaning.
inline constexpr int kViewDataVersion = 1;

// Returns tree as
//   {"format": "deepcontext-view", "version": 1,
//    "sources": [{"path": ..., "metadata": {key: value}}],
//    "metrics": [{"name", "unit", "description"}], "defaultMetric": 0,
//    "kinds": ["root", "thread", ...],   // FrameKind names by value
//    "strings": [...],                   // names and files, interned
//    "frames": {"kind": [], "name": [], "file": [], "line": []},
//    "nodes": {"parent": [], "frame": []},  // node 0 is the root
//    "values": [{"node": [], "sum": [], "count": [], "min": [], "max": []}]}
// Arrays are columns so that a million nodes parse quickly into typed
// arrays. "values" has one entry per metric with the exclusive samples of
// the nodes that have any (sparse); inclusive values are subtree sums of
// these. "defaultMetric" is analysis::DefaultMetric, or -1 without metrics.
// Non-UTF-8 bytes in names become U+FFFD. May throw std::bad_alloc.
std::string RenderViewData(const analysis::ProfileTree& tree);

}  // namespace deepcontext::exporter
