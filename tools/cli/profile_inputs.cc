#include "tools/cli/profile_inputs.h"

#include <utility>

#include "format/dctx_file.h"
#include "tools/sass/profile_sass.h"

namespace deepcontext::cli {

std::optional<analysis::ProfileTree> ReadProfileTree(
    const std::vector<std::string>& files, const std::string& prefix,
    std::ostream& err, bool sass) {
  std::vector<format::Profile> profiles;
  sass::ProfileSass sass_labels;
  bool all_ok = true;
  for (const std::string& file : files) {
    StatusOr<format::Profile> read = format::ReadProfileFile(file);
    if (!read.ok()) {
      err << prefix << read.status().message() << "\n";
      all_ok = false;
      continue;
    }
    if (sass) {
      for (const std::string& note : sass_labels.Annotate(*read, file)) {
        err << prefix << "note: " << note << "\n";
      }
    }
    profiles.push_back(std::move(*read));
  }
  if (!all_ok) return std::nullopt;
  // The tree takes the profiles over, so their values are not held twice.
  return analysis::ProfileTree::FromOwnedProfiles(std::move(profiles), files);
}

}  // namespace deepcontext::cli
