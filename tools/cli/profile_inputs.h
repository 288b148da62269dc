// Reading the profile files a command was given into one tree.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::cli {

// Reads every file and merges them (ProfileTree::FromProfiles). Each file
// that cannot be read gets its one-line error on `err`, prefixed with
// `prefix`, and the result is empty: a tree over the readable subset would
// silently misstate the totals of a multi-rank job. With `sass`, sampled
// GPU instructions get their SASS text from the cubins kept beside each
// profile (tools/sass/instruction_sass.h); why some could not is one note
// line on `err` each, and the command goes on.
std::optional<analysis::ProfileTree> ReadProfileTree(
    const std::vector<std::string>& files, const std::string& prefix,
    std::ostream& err, bool sass = true);

}  // namespace deepcontext::cli
