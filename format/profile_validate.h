// Structural invariants of a Profile, checked by the reader on every file and
// by the writer before it writes one.
#pragma once

#include <string>

#include "common/status.h"
#include "format/profile_data.h"

namespace deepcontext::format {

// Ok when profile satisfies every invariant listed in docs/FORMAT.md
// ("Invariants"): string 0 is empty; node 0 is the only kRoot node and is its
// own parent; every other node's parent is below its own index; kinds are
// known; string, node and metric ids are in range; metric names are non-empty
// and unique; each (node, metric) pair has at most one value. Otherwise an
// error with a one-line description of the first violation, without a path.
// May throw std::bad_alloc.
Status ValidateProfile(const Profile& profile);

}  // namespace deepcontext::format
