// Files for the viewer's tests (server API tests and browser tests): two
// GPU training profiles to compare, the source files they name, and the
// things a request must never reach.
#pragma once

#include <string>

#include "common/status.h"
#include "format/profile_data.h"

namespace deepcontext::server::testing {

// Builds the "before" or "after" profile of a small GPU training step whose
// Python frames name src_dir/train.py and src_dir/model.py (and
// src_dir/missing.py, which does not exist). "after" runs the GEMM kernel
// twice as long, drops the ReLU kernel and adds a fused one.
format::Profile MakeGpuProfile(const std::string& src_dir, bool after);

// Writes into dir (which must exist):
//   before.dctx, after.dctx   MakeGpuProfile of dir/src
//   foreign.dctx              not a profile
//   src/train.py, src/model.py  the named sources
//   secret.txt                a file no profile names
//   src/link.py               a symlink to ../secret.txt, not named either
// An error says what failed.
deepcontext::Status WriteViewFixtures(const std::string& dir);

}  // namespace deepcontext::server::testing
