#include "format/dctx_file.h"

#include <new>

#include "format/dctx_container.h"
#include "format/file_io.h"
#include "format/payload_codec.h"
#include "format/profile_validate.h"

namespace deepcontext::format {
namespace {

ReadResult Failure(const std::string& source, const std::string& problem) {
  ReadResult result;
  result.error = source + ": " + problem;
  return result;
}

ReadResult DecodeOrThrow(const std::string& bytes, const std::string& source,
                         std::string* owned_bytes = nullptr) {
  PayloadBuffer payload;
  std::string problem = UnwrapPayload(bytes, &payload);
  if (!problem.empty()) return Failure(source, problem);
  // Neither the file's bytes once decompressed nor the payload's once
  // decoded are needed again: both are given back as early as possible, so
  // reading peaks near the size of the profile itself.
  if (owned_bytes != nullptr) std::string().swap(*owned_bytes);
  ReadResult result;
  problem = DecodePayload(payload.view(), &result.profile, &payload);
  if (!problem.empty()) return Failure(source, problem);
  problem = ValidateProfile(result.profile);
  if (!problem.empty()) return Failure(source, "invalid profile: " + problem);
  result.ok = true;
  return result;
}

std::string WriteOrThrow(const Profile& profile, const std::string& path) {
  if (path.empty()) return "(empty path): no file name given";
  std::string problem = ValidateProfile(profile);
  if (!problem.empty()) return path + ": invalid profile: " + problem;
  const std::string bytes =
      WrapPayload(EncodePayload(profile), kFormatMajor, kFormatMinor);
  if (bytes.empty()) return path + ": compression failed";
  problem = WriteFileAtomically(path, bytes);
  if (!problem.empty()) return path + ": " + problem;
  return "";
}

}  // namespace

std::string WriteProfileFile(const Profile& profile, const std::string& path) {
  try {
    return WriteOrThrow(profile, path);
  } catch (...) {
    // Allocation failure is the only exception expected here. Naming the
    // path needs memory; the literal fallback fits the small-string buffer.
    try {
      return path + ": out of memory";
    } catch (...) {
      return "out of memory";
    }
  }
}

std::string EncodeProfile(const Profile& profile) {
  try {
    return WrapPayload(EncodePayload(profile), kFormatMajor, kFormatMinor);
  } catch (...) {
    return "";
  }
}

ReadResult ReadProfileFile(const std::string& path) {
  try {
    std::string bytes;
    std::string problem = ReadWholeFile(path, kMaxFileBytes, &bytes);
    if (!problem.empty()) return Failure(path, problem);
    return DecodeOrThrow(bytes, path, &bytes);
  } catch (...) {
    ReadResult result;
    result.error = "out of memory";
    try {
      result.error = path + ": out of memory";
    } catch (...) {
    }
    return result;
  }
}

ReadResult DecodeProfile(const std::string& bytes, const std::string& source) {
  try {
    return DecodeOrThrow(bytes, source);
  } catch (...) {
    ReadResult result;
    result.error = "out of memory";
    try {
      result.error = source + ": out of memory";
    } catch (...) {
    }
    return result;
  }
}

}  // namespace deepcontext::format
