#include "tools/cli/terminal_width.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <string_view>

namespace deepcontext::cli {

int TerminalWidth(int fd) {
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr) {
    std::string_view text = columns;
    int value = 0;
    auto [end, error] =
        std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc() && end == text.data() + text.size() && value > 0) {
      return value;
    }
  }
  winsize size{};
  if (isatty(fd) == 1 && ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    return size.ws_col;
  }
  return kDefaultReportWidth;
}

}  // namespace deepcontext::cli
