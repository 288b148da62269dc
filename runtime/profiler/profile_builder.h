// Writes the live state (DLMonitor's context tree, the metric store, the
// session's metadata) as a .dctx file.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/profiler/metric_store.h"

namespace deepcontext::profiler {

// Keeps only contexts that carry samples and their ancestors, so contexts
// created but never measured (e.g. before a region started) cost nothing in
// the file. Reads contexts through the public DLMonitor ABI. The file is
// streamed section by section (format/profile_stream.h): at a program's
// exit, when the tree is largest, no second copy of it is made, only a few
// bytes per context and the encoded records of one section at a time.
// Returns ok or a one-line error naming path.
Status WriteProfile(
    const MetricStore& store,
    const std::vector<std::pair<std::string, std::string>>& metadata,
    const std::string& path);

}  // namespace deepcontext::profiler
