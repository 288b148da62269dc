// Findings as JSON: the stable shape scripts, the GUI and user rules share
// (docs/ANALYZER.md, "JSON"). Version 1; fields are only ever added.
#pragma once

#include <string>
#include <vector>

#include "tools/analyzer/analyzer.h"
#include "common/status.h"

namespace deepcontext::analyzer {

// The whole analysis: {"version", "basis", "rules_run", "not_checked",
// "findings": [...]}.
std::string AnalysisToJson(const Analysis& analysis);

// Parses findings written in the same shape (a JSON array of findings, as
// user rules produce them); missing optional fields take defaults. A
// finding without a benefit basis gets basis_ns/basis, and without a
// severity the one its benefit share calls for.
StatusOr<std::vector<Finding>> FindingsFromJson(const std::string& text,
                                                double basis_ns = 0,
                                                const std::string& basis = "");

}  // namespace deepcontext::analyzer
