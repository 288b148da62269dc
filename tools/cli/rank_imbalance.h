// The imbalance section for `deepcontext report` given the files of several
// ranks: they are merged in memory, one file at a time, as `deepcontext
// merge` would.
#pragma once

#include <string>
#include <vector>

#include "tools/report/report.h"

namespace deepcontext::cli {

// Returns "\n" + the imbalance section of the ranks in files, or "" when
// fewer than two ranks are given, some file has no `rank` metadata (the
// processes are then not ranks of one job), or a file cannot be read.
std::string RankImbalanceOfFiles(const std::vector<std::string>& files,
                                 const report::ReportOptions& options);

}  // namespace deepcontext::cli
