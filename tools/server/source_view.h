// The source view's data: a file the profile names, with per-line metrics.
// Only files that some frame of the profile names are ever opened, so a
// request cannot reach any other file however it spells its path.
#pragma once

#include <string>

#include "tools/server/profile_store.h"
#include "tools/server/status_or.h"

namespace deepcontext::server {

// Largest source file served; bigger ones are described, not sent.
inline constexpr size_t kMaxSourceBytes = 8 << 20;

// Returns the JSON
//   {"file": requested, "text": "..." or null, "error": "..." (when null),
//    "lines": [{"line": 12, "exclusive": {metric: v}, "inclusive": {metric: v}}]}
// where lines aggregate the frames at file:line (flat-view values, so a
// recursive frame is not counted twice). requested must equal, byte for
// byte, a file some frame names (kNotFound otherwise). A named file that
// cannot be read, is not a regular file or is too big still answers, with
// "text": null and the reason, so the per-line metrics stay visible.
StatusOr<std::string> RenderSourceView(const LoadedProfile& profile,
                                       const std::string& requested);

}  // namespace deepcontext::server
