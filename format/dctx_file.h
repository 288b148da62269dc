// Reading and writing .dctx files (layout: docs/FORMAT.md).
#pragma once

#include <string>

#include "common/status.h"
#include "format/profile_data.h"

namespace deepcontext::format {

// Writes profile to path atomically: the bytes go to a temporary file in the
// same directory which is then renamed over path, so readers never see a
// partial file. Refuses profiles that break the invariants of
// ValidateProfile (format/profile_validate.h). An error is one line naming
// path. Never throws.
Status WriteProfileFile(const Profile& profile, const std::string& path);

// Serializes profile to the exact bytes WriteProfileFile would write, or an
// error when memory or compression fails. Does not check invariants, so a
// broken profile gives bytes every reader rejects. Never throws.
StatusOr<std::string> EncodeProfile(const Profile& profile);

// Reads and fully validates a .dctx file. Truncated, corrupt, foreign or
// newer-major-version files give an error of one line, "<path>: <problem>";
// never a crash, never a partial profile.
StatusOr<Profile> ReadProfileFile(const std::string& path);

// Decodes bytes as produced by EncodeProfile; `source` names them in errors.
StatusOr<Profile> DecodeProfile(const std::string& bytes,
                                const std::string& source);

}  // namespace deepcontext::format
