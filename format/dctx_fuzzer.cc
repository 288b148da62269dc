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
  const std::string encoded = fmt::EncodeProfile(profile);
  const fmt::ReadResult again = fmt::DecodeProfile(encoded, "re-encoded");
  if (!again.ok || fmt::EncodeProfile(again.profile) != encoded) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const fmt::ReadResult file = fmt::DecodeProfile(bytes, "input");
  if (file.ok) {
    CheckRoundTrip(file.profile);
  } else if (file.error.empty() || file.error.find('\n') != std::string::npos) {
    std::abort();
  }
  fmt::Profile payload_profile;
  if (fmt::DecodePayload(bytes, &payload_profile).empty() &&
      fmt::ValidateProfile(payload_profile).empty()) {
    CheckRoundTrip(payload_profile);
  }
  return 0;
}
