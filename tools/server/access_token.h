// The secret every request to `deepcontext view` must carry: other local
// users and web pages in the user's browser can reach 127.0.0.1 too.
#pragma once

#include <string>
#include <string_view>

namespace deepcontext::server {

// Returns 32 random hex digits (128 bits from std::random_device).
std::string NewAccessToken();

// Compares in time independent of where the strings differ, so the token
// cannot be guessed byte by byte from response times.
bool TokensEqual(std::string_view expected, std::string_view given);

}  // namespace deepcontext::server
