// Where `deepcontext run` writes profiles: checks on the -o path before the
// program starts, and the clean-up of temporaries left by killed writers.
#pragma once

#include <string>

#include "common/status.h"

namespace deepcontext::cli {

// Longest file name accepted for -o: other processes write
// <stem>[.rank<R>].<pid>.dctx beside it, and a file name has at most 255
// bytes.
inline constexpr size_t kMaxOutputNameBytes = 230;

// The -o path made absolute; the program's stem (.dctx added) by default.
std::string ResolveOutputPath(const std::string& requested,
                              const std::string& default_stem);

// Refuses, with one line saying why, an output the run could not honour
// exactly: a directory, a device or other non-regular file, a name too long
// for the files of other processes, a directory that does not exist or
// cannot be written.
Status CheckOutputPath(const std::string& output);

// <stem> of an output path: its file name without a final .dctx.
std::string OutputStem(const std::string& output);

// Removes the temporary files "<name>.<pid>.<n>.tmp" of profiles of this
// output (names starting with its stem) in its directory whose writer pid
// no longer runs: a writer killed mid-write leaves one. Only regular files
// of the current user are removed. Returns how many were removed.
int RemoveStaleTemporaries(const std::string& output);

}  // namespace deepcontext::cli
