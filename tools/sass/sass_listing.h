// The SASS instructions of a cubin, read from `nvdisasm -c` output: per
// function (its symbol, as CUPTI names kernels), the text of the
// instruction at each offset.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace deepcontext::sass {

class SassListing {
 public:
  // Parses nvdisasm's listing: a function starts at its `.text.<name>:`
  // label (or `.section .text.<name>`), an instruction line is
  // `/*<hex offset>*/ <instruction> ;` optionally followed by the
  // encoding in a comment, and Maxwell-era `{ ... }` dual-issue braces are
  // dropped. Other lines (directives, labels) are skipped.
  static SassListing Parse(std::string_view listing);

  // The instruction at `offset` in `function` ("LDG.E.128 R4, desc[UR4][R2.64]",
  // whitespace collapsed, no trailing ';'); nullptr when unknown.
  const std::string* Find(const std::string& function, uint64_t offset) const;
  bool HasFunction(const std::string& function) const;
  size_t function_count() const { return functions_.size(); }

 private:
  std::map<std::string, std::map<uint64_t, std::string>> functions_;
};

}  // namespace deepcontext::sass
