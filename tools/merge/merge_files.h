// `deepcontext merge`: reads rank profiles one file at a time into a
// RankMerger and writes the merged profile, so memory holds the merged tree
// and one input, never all inputs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"

namespace deepcontext::merge {

struct MergeSummary {
  size_t ranks = 0;      // distinct ranks
  size_t processes = 0;  // profiles merged
  size_t contexts = 0;  // nodes of the merged tree, the root included
};

// Merges the profiles at paths into output (written atomically). Any
// unreadable input is an error and writes nothing.
StatusOr<MergeSummary> MergeProfileFiles(const std::vector<std::string>& paths,
                                         const std::string& output);

}  // namespace deepcontext::merge
