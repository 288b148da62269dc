// The process's command line as one line of text, for the profile's
// metadata and for messages naming this process to others.
#pragma once

#include <fstream>
#include <iterator>
#include <string>

namespace deepcontext {

// /proc/self/cmdline with its arguments joined by spaces; "" when it cannot
// be read.
inline std::string ThisCommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw) {
    if (c == '\0') c = ' ';
  }
  return raw;
}

}  // namespace deepcontext
