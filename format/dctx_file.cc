#include "format/dctx_file.h"

#include <new>
#include <utility>

#include "format/dctx_container.h"
#include "format/file_io.h"
#include "format/payload_codec.h"
#include "format/profile_validate.h"

namespace deepcontext::format {
namespace {

// "<source>: <problem>", or a bare "out of memory" when even that string
// cannot be built: the literal fits the small-string buffer.
Status Failure(const std::string& source, const std::string& problem) noexcept {
  try {
    return Status::Error(source + ": " + problem);
  } catch (...) {
    return Status::Error("out of memory");
  }
}

StatusOr<Profile> DecodeOrThrow(const std::string& bytes,
                                const std::string& source,
                                std::string* owned_bytes = nullptr) {
  PayloadBuffer payload;
  if (Status unwrapped = UnwrapPayload(bytes, &payload); !unwrapped.ok()) {
    return Failure(source, unwrapped.message());
  }
  // Neither the file's bytes once decompressed nor the payload's once
  // decoded are needed again: both are given back as early as possible, so
  // reading peaks near the size of the profile itself.
  if (owned_bytes != nullptr) std::string().swap(*owned_bytes);
  Profile profile;
  if (Status decoded = DecodePayload(payload.view(), &profile, &payload);
      !decoded.ok()) {
    return Failure(source, decoded.message());
  }
  if (Status valid = ValidateProfile(profile); !valid.ok()) {
    return Failure(source, "invalid profile: " + valid.message());
  }
  return profile;
}

Status WriteOrThrow(const Profile& profile, const std::string& path) {
  if (path.empty()) return Status::Error("(empty path): no file name given");
  if (Status valid = ValidateProfile(profile); !valid.ok()) {
    return Failure(path, "invalid profile: " + valid.message());
  }
  StatusOr<std::string> bytes =
      WrapPayload(EncodePayload(profile), kFormatMajor, kFormatMinor);
  if (!bytes.ok()) return Failure(path, bytes.status().message());
  if (Status written = WriteFileAtomically(path, *bytes); !written.ok()) {
    return Failure(path, written.message());
  }
  return Status::Ok();
}

}  // namespace

Status WriteProfileFile(const Profile& profile, const std::string& path) {
  try {
    return WriteOrThrow(profile, path);
  } catch (...) {
    // Allocation failure is the only exception expected here.
    return Failure(path, "out of memory");
  }
}

StatusOr<std::string> EncodeProfile(const Profile& profile) {
  try {
    return WrapPayload(EncodePayload(profile), kFormatMajor, kFormatMinor);
  } catch (...) {
    return Status::Error("out of memory");
  }
}

StatusOr<Profile> ReadProfileFile(const std::string& path) {
  try {
    StatusOr<std::string> bytes = ReadWholeFile(path, kMaxFileBytes);
    if (!bytes.ok()) return Failure(path, bytes.status().message());
    return DecodeOrThrow(*bytes, path, &*bytes);
  } catch (...) {
    return Failure(path, "out of memory");
  }
}

StatusOr<Profile> DecodeProfile(const std::string& bytes,
                                const std::string& source) {
  try {
    return DecodeOrThrow(bytes, source);
  } catch (...) {
    return Failure(source, "out of memory");
  }
}

}  // namespace deepcontext::format
