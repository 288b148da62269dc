#include "tools/sass/profile_sass.h"

#include <utility>

#include "tools/sass/instruction_sass.h"

namespace deepcontext::sass {

ProfileSass::ProfileSass(NvdisasmSearch search) : search_(std::move(search)) {}

std::vector<std::string> ProfileSass::Annotate(format::Profile& profile,
                                               const std::string& path) {
  std::vector<std::string> notes;
  if (profile.Metadata("gpu_samples_cubins").empty()) return notes;
  if (disassembler_ == nullptr) {
    const std::optional<std::string> nvdisasm = FindNvdisasm(search_);
    // Without nvdisasm, listings kept beside the cubins (by a command on
    // a machine with the toolkit) still answer.
    disassembler_ = std::make_unique<Disassembler>(nvdisasm.value_or(""), ProgramLimits{},
                                                   Disassembler::DiskCache::kBesideCubin);
  }
  for (std::string& note : AnnotateInstructions(profile, path, disassembler_.get()).notes) {
    if (notes_given_.insert(note).second) notes.push_back(std::move(note));
  }
  return notes;
}

}  // namespace deepcontext::sass
