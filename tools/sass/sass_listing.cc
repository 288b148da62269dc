#include "tools/sass/sass_listing.h"

#include <cctype>
#include <charconv>

namespace deepcontext::sass {
namespace {

constexpr std::string_view kTextPrefix = ".text.";

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::string CollapseSpaces(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// "/*0080*/ LDG.E.128 R4, [R2.64] ; /* 0x... */" -> offset and text.
bool ParseInstruction(std::string_view line, uint64_t* offset, std::string* text) {
  if (!line.starts_with("/*")) return false;
  const size_t close = line.find("*/");
  if (close == std::string_view::npos || close <= 2) return false;
  const std::string_view hex = line.substr(2, close - 2);
  const auto [end, error] = std::from_chars(hex.data(), hex.data() + hex.size(), *offset, 16);
  if (error != std::errc() || end != hex.data() + hex.size()) return false;
  std::string_view rest = line.substr(close + 2);
  if (const size_t comment = rest.find("/*"); comment != std::string_view::npos) {
    rest = rest.substr(0, comment);
  }
  rest = Trim(rest);
  if (rest.starts_with("{")) rest = Trim(rest.substr(1));
  if (rest.ends_with("}")) rest = Trim(rest.substr(0, rest.size() - 1));
  if (rest.ends_with(";")) rest = Trim(rest.substr(0, rest.size() - 1));
  if (rest.empty()) return false;
  *text = CollapseSpaces(rest);
  return true;
}

// The function a line starts, if any: ".text.NAME:" or
// ".section .text.NAME,...".
bool ParseFunctionStart(std::string_view line, std::string* name) {
  if (line.starts_with(kTextPrefix) && line.ends_with(":")) {
    *name = std::string(line.substr(kTextPrefix.size(),
                                    line.size() - kTextPrefix.size() - 1));
    return !name->empty();
  }
  if (line.starts_with(".section")) {
    std::string_view rest = Trim(line.substr(8));
    if (!rest.starts_with(kTextPrefix)) return false;
    rest.remove_prefix(kTextPrefix.size());
    *name = std::string(rest.substr(0, rest.find(',')));
    return !name->empty();
  }
  return false;
}

}  // namespace

SassListing SassListing::Parse(std::string_view listing) {
  SassListing out;
  std::map<uint64_t, std::string>* current = nullptr;
  size_t start = 0;
  while (start < listing.size()) {
    size_t end = listing.find('\n', start);
    if (end == std::string_view::npos) end = listing.size();
    const std::string_view line = Trim(listing.substr(start, end - start));
    start = end + 1;
    std::string name;
    if (ParseFunctionStart(line, &name)) {
      current = &out.functions_[name];
      continue;
    }
    uint64_t offset = 0;
    std::string text;
    if (current != nullptr && ParseInstruction(line, &offset, &text)) {
      current->emplace(offset, std::move(text));
    }
  }
  return out;
}

const std::string* SassListing::Find(const std::string& function, uint64_t offset) const {
  const auto it = functions_.find(function);
  if (it == functions_.end()) return nullptr;
  const auto at = it->second.find(offset);
  return at == it->second.end() ? nullptr : &at->second;
}

bool SassListing::HasFunction(const std::string& function) const {
  return functions_.count(function) != 0;
}

}  // namespace deepcontext::sass
