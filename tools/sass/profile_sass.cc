#include "tools/sass/profile_sass.h"

#include <utility>

#include "tools/sass/instruction_sass.h"

namespace deepcontext::sass {

ProfileSass::ProfileSass(NvdisasmSearch search) : search_(std::move(search)) {}

std::vector<std::string> ProfileSass::Annotate(format::Profile& profile,
                                               const std::string& path) {
  std::vector<std::string> notes;
  if (profile.Metadata("gpu_samples_cubins").empty()) return notes;
  if (!disassembler_) {
    const std::optional<std::string> nvdisasm = FindNvdisasm(search_);
    disassembler_ = nvdisasm ? std::make_unique<Disassembler>(*nvdisasm) : nullptr;
  }
  for (std::string& note : AnnotateInstructions(profile, path, disassembler_->get()).notes) {
    if (notes_given_.insert(note).second) notes.push_back(std::move(note));
  }
  return notes;
}

}  // namespace deepcontext::sass
