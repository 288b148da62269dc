// The "pprof" export format: the tree as a gzip-compressed profile.proto
// message (github.com/google/pprof, proto/profile.proto), which `pprof` /
// `go tool pprof` and the tools built on them open.
#pragma once

#include <string>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::exporter {

// Returns the gzipped bytes of one perftools.profiles.Profile:
// - one sample_type per metric (units "nanoseconds", "bytes", "count", or
//   the metric's own), the report's default metric as default_sample_type;
//   the per-rank companion metrics of merged profiles are left out;
// - one sample per calling context with a nonzero exclusive value of any
//   metric: its values are the exclusive sums (rounded to integers), its
//   stack the context's frames leaf first, the root left out;
// - one location and function per distinct frame: function name =
//   the name a report shows ("aten::mm", "[forward]", "main thread"),
//   system_name = the frame kind, filename and line where known;
// - time_nanos / duration_nanos from the start and duration metadata, the
//   command line as a comment.
// May throw std::bad_alloc.
std::string RenderPprof(const analysis::ProfileTree& tree);

}  // namespace deepcontext::exporter
