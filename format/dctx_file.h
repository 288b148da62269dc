// Reading and writing .dctx files (layout: docs/FORMAT.md).
#pragma once

#include <string>

#include "format/profile_data.h"

namespace deepcontext::format {

// Writes profile to path atomically: the bytes go to a temporary file in the
// same directory which is then renamed over path, so readers never see a
// partial file. Refuses profiles that break the invariants of
// ValidateProfile (format/profile_validate.h). Returns "" on success,
// otherwise a one-line error naming path. Never throws.
std::string WriteProfileFile(const Profile& profile, const std::string& path);

// Serializes profile to the exact bytes WriteProfileFile would write. Does not
// check invariants, so a broken profile gives bytes every reader rejects.
// Returns "" when memory runs out; never throws.
std::string EncodeProfile(const Profile& profile);

struct ReadResult {
  bool ok = false;
  std::string error;  // one line: "<path>: <problem>" when !ok
  Profile profile;
};

// Reads and fully validates a .dctx file. Truncated, corrupt, foreign or
// newer-major-version files give ok=false with a one-line error; never a
// crash, never a partial profile.
ReadResult ReadProfileFile(const std::string& path);

// Decodes bytes as produced by EncodeProfile; `source` names them in errors.
ReadResult DecodeProfile(const std::string& bytes, const std::string& source);

}  // namespace deepcontext::format
