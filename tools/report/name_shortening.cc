#include "tools/report/name_shortening.h"

#include <cctype>

#include "tools/report/text_table.h"

namespace deepcontext::report {

namespace {

bool IsIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Index of the '>' closing the '<' at open, or npos when unbalanced.
size_t ClosingBracket(std::string_view text, size_t open) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == '<') ++depth;
    if (text[i] == '>' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

}  // namespace

std::string CollapseTemplateArguments(std::string_view name) {
  std::string out;
  size_t i = 0;
  while (i < name.size()) {
    if (name[i] == '<' && i > 0 && IsIdentifierChar(name[i - 1])) {
      size_t close = ClosingBracket(name, i);
      // "<...>" only saves room for arguments longer than "...".
      if (close != std::string_view::npos && close - i - 1 > 3) {
        out += "<...>";
        i = close + 1;
        continue;
      }
    }
    out += name[i];
    ++i;
  }
  return out;
}

std::string ShortenName(std::string_view cell, size_t width,
                        size_t kept_bytes) {
  if (DisplayWidth(cell) <= width) return std::string(cell);
  if (kept_bytes > cell.size()) kept_bytes = cell.size();
  std::string collapsed = std::string(cell.substr(0, kept_bytes)) +
                          CollapseTemplateArguments(cell.substr(kept_bytes));
  return EllipsizeMiddle(collapsed, width, kept_bytes);
}

std::string ShortenLocation(std::string_view cell, size_t width,
                            size_t /*kept_bytes: locations have none*/) {
  std::string_view rest = cell;
  while (DisplayWidth(rest) > width) {
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return EllipsizeMiddle(rest, width);
}

}  // namespace deepcontext::report
