#include "tools/cli/profile_inputs.h"

#include <utility>

#include "format/dctx_file.h"

namespace deepcontext::cli {

std::optional<analysis::ProfileTree> ReadProfileTree(
    const std::vector<std::string>& files, const std::string& prefix,
    std::ostream& err) {
  std::vector<format::Profile> profiles;
  bool all_ok = true;
  for (const std::string& file : files) {
    format::ReadResult read = format::ReadProfileFile(file);
    if (!read.ok) {
      err << prefix << read.error << "\n";
      all_ok = false;
      continue;
    }
    profiles.push_back(std::move(read.profile));
  }
  if (!all_ok) return std::nullopt;
  // The tree takes the profiles over, so their values are not held twice.
  return analysis::ProfileTree::FromOwnedProfiles(std::move(profiles), files);
}

}  // namespace deepcontext::cli
