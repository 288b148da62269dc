#include "tools/cli/profile_inputs.h"

#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "format/dctx_file.h"
#include "tools/sass/instruction_sass.h"

namespace deepcontext::cli {

std::optional<analysis::ProfileTree> ReadProfileTree(
    const std::vector<std::string>& files, const std::string& prefix,
    std::ostream& err, bool sass) {
  std::vector<format::Profile> profiles;
  // Made at the first profile that keeps cubins; shared by all files so
  // that the cubins of a multi-process run are disassembled once.
  std::optional<std::unique_ptr<sass::Disassembler>> disassembler;
  std::set<std::string> notes;
  bool all_ok = true;
  for (const std::string& file : files) {
    format::ReadResult read = format::ReadProfileFile(file);
    if (!read.ok) {
      err << prefix << read.error << "\n";
      all_ok = false;
      continue;
    }
    if (sass && !read.profile.Metadata("gpu_samples_cubins").empty()) {
      if (!disassembler) {
        const auto nvdisasm = sass::FindNvdisasm(sass::NvdisasmSearch::FromEnvironment());
        disassembler = nvdisasm ? std::make_unique<sass::Disassembler>(*nvdisasm) : nullptr;
      }
      const sass::SassAnnotation annotation =
          sass::AnnotateInstructions(read.profile, file, disassembler->get());
      for (const std::string& note : annotation.notes) {
        if (notes.insert(note).second) err << prefix << "note: " << note << "\n";
      }
    }
    profiles.push_back(std::move(read.profile));
  }
  if (!all_ok) return std::nullopt;
  // The tree takes the profiles over, so their values are not held twice.
  return analysis::ProfileTree::FromOwnedProfiles(std::move(profiles), files);
}

}  // namespace deepcontext::cli
