// JSON pieces shared by the exports that describe a whole profile (the JSON
// export and the viewer's data): its sources and metrics, and a dump that
// survives names that are not UTF-8.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::exporter {

// Keys keep the order they are written in, so documents read in the order
// their schemas document.
using OrderedJson = nlohmann::ordered_json;

// Profiles carry file and function names straight from the profiled
// process; a non-UTF-8 byte in one must not make the whole document fail.
std::string DumpJson(const OrderedJson& value);

// [{"path", "metadata": {...}}] per profile read.
OrderedJson SourcesJson(const analysis::ProfileTree& tree);

// [{"name", "unit", "description"}] per metric.
OrderedJson MetricsJson(const analysis::ProfileTree& tree);

}  // namespace deepcontext::exporter
