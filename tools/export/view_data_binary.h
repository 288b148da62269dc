// The view data of view_data.h in a binary layout, for `deepcontext view`:
// a million-node tree arrives as typed arrays the browser uses in place,
// with no number to format on the server or to parse in the page. It comes
// in two documents so that the first screen waits only for what it draws:
// the tree with each sample's sum, then the samples' count, min and max
// (the details panel's), which the page asks for afterwards.
#pragma once

#include <string>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::exporter {

// First 8 bytes of each document.
inline constexpr char kViewBinaryMagic[8] = {'D', 'C', 'V', 'I',
                                             'E', 'W', '0', '2'};
inline constexpr char kViewStatsMagic[8] = {'D', 'C', 'S', 'T',
                                            'A', 'T', '0', '1'};

// Returns tree as
//   magic (8 bytes), header length H (uint32), header (H bytes of JSON),
//   zero padding to a multiple of 8, then the arrays, each padded to a
//   multiple of 8 bytes, all little-endian:
//     nodes.parent  uint32[nodes]      nodes.frame  uint32[nodes]
//     frames.kind   uint8[frames]      frames.name  uint32[frames]
//     frames.file   uint32[frames]     frames.line  uint32[frames]
//     per metric m: node uint32[n_m], sum float64[n_m]
// The header is the JSON of view_data.h without "frames", "nodes" and
// "values", plus "nodeCount", "frameCount" and "valueCounts": [n_m...].
// Values hold the same sparse exclusive samples as the JSON form, in the
// same order. May throw std::bad_alloc.
std::string RenderViewBinary(const analysis::ProfileTree &tree);

// Returns the rest of each sample, in the order of RenderViewBinary's:
//   magic, header length H (uint32), header {"valueCounts": [n_m...]},
//   padding, then per metric m: count, min, max float64[n_m].
std::string RenderViewStatsBinary(const analysis::ProfileTree &tree);

} // namespace deepcontext::exporter
