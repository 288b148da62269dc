#include "tools/report/location.h"

namespace deepcontext::report {

std::string ShortenPath(std::string_view path) {
  for (std::string_view marker : {"/site-packages/", "/dist-packages/"}) {
    size_t at = path.rfind(marker);
    if (at != std::string_view::npos) {
      return std::string(path.substr(at + marker.size()));
    }
  }
  size_t last = path.rfind('/');
  if (last == std::string_view::npos || last == 0) return std::string(path);
  size_t second = path.rfind('/', last - 1);
  if (second == std::string_view::npos) return std::string(path);
  return std::string(path.substr(second + 1));
}

std::string FormatLocation(const analysis::Frame& frame, bool full_path) {
  if (frame.file.empty()) return "";
  std::string location = full_path ? frame.file : ShortenPath(frame.file);
  if (frame.line != 0) {
    location += ':';
    location += std::to_string(frame.line);
  }
  return location;
}

}  // namespace deepcontext::report
