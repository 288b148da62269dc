// Turns the live state (DLMonitor's context tree, the metric store, the
// session's metadata) into a format::Profile ready to be written.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "format/profile_data.h"
#include "runtime/profiler/metric_store.h"

namespace deepcontext::profiler {

// Keeps only contexts that carry samples and their ancestors, so contexts
// created but never measured (e.g. before a region started) cost nothing in
// the file. Reads contexts through the public DLMonitor ABI.
format::Profile BuildProfile(
    const MetricStore& store,
    const std::vector<std::pair<std::string, std::string>>& metadata);

}  // namespace deepcontext::profiler
