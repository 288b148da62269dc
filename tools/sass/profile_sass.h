// SASS for the profiles one command reads (report, export, analyze, view):
// nvdisasm is looked for once, at the first profile that keeps cubins, its
// listings are shared by all files (the processes of one run share their
// cubins) and kept beside each cubin for the next command, and each note
// is given once.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "format/profile_data.h"
#include "tools/sass/disassembler.h"

namespace deepcontext::sass {

class ProfileSass {
 public:
  explicit ProfileSass(NvdisasmSearch search = NvdisasmSearch::FromEnvironment());

  // Labels the instruction nodes of `profile`, read from `path`, with their
  // SASS (instruction_sass.h). Returns the notes not given before.
  std::vector<std::string> Annotate(format::Profile& profile, const std::string& path);

 private:
  NvdisasmSearch search_;
  // Made when first needed.
  std::unique_ptr<Disassembler> disassembler_;
  std::set<std::string> notes_given_;
};

}  // namespace deepcontext::sass
