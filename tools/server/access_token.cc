#include "tools/server/access_token.h"

#include <cstdint>
#include <random>

namespace deepcontext::server {

std::string NewAccessToken() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device random;
  std::string token;
  for (int word = 0; word < 4; ++word) {
    uint32_t bits = random();
    for (int nibble = 0; nibble < 8; ++nibble) {
      token += kHex[bits & 0xf];
      bits >>= 4;
    }
  }
  return token;
}

bool TokensEqual(std::string_view expected, std::string_view given) {
  if (expected.empty() || expected.size() != given.size()) return false;
  unsigned char difference = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    difference |= static_cast<unsigned char>(expected[i] ^ given[i]);
  }
  return difference == 0;
}

}  // namespace deepcontext::server
