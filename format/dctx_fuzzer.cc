// libFuzzer entry point for the reader. Any byte string must be rejected with
// a one-line error or decode to a profile that survives an encode/decode round
// trip unchanged. The input is tried both as a whole file and as a bare
// payload, because random bytes rarely survive zlib and reach the sections.
//   cmake -DCMAKE_CXX_COMPILER=clang++ ... && build/bin/dctx_fuzzer corpus/

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "format/dctx_file.h"
#include "format/payload_codec.h"
#include "format/profile_validate.h"

namespace {

namespace fmt = deepcontext::format;

void CheckRoundTrip(const fmt::Profile& profile) {
  const deepcontext::StatusOr<std::string> encoded =
      fmt::EncodeProfile(profile);
  if (!encoded.ok()) std::abort();
  const deepcontext::StatusOr<fmt::Profile> again =
      fmt::DecodeProfile(*encoded, "re-encoded");
  if (!again.ok()) std::abort();
  const deepcontext::StatusOr<std::string> reencoded =
      fmt::EncodeProfile(*again);
  if (!reencoded.ok() || *reencoded != *encoded) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const deepcontext::StatusOr<fmt::Profile> file =
      fmt::DecodeProfile(bytes, "input");
  if (file.ok()) {
    CheckRoundTrip(*file);
  } else {
    const std::string& error = file.status().message();
    if (error.empty() || error.find('\n') != std::string::npos) std::abort();
  }
  fmt::Profile payload_profile;
  if (fmt::DecodePayload(bytes, &payload_profile).ok() &&
      fmt::ValidateProfile(payload_profile).ok()) {
    CheckRoundTrip(payload_profile);
  }
  return 0;
}
