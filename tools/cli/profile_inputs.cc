#include "tools/cli/profile_inputs.h"

#include <utility>

#include "format/dctx_file.h"

namespace deepcontext::cli {

std::optional<analysis::ProfileTree> ReadProfileTree(
    const std::vector<std::string>& files, const std::string& prefix,
    std::ostream& err) {
  std::vector<format::ReadResult> reads;
  bool all_ok = true;
  for (const std::string& file : files) {
    format::ReadResult read = format::ReadProfileFile(file);
    if (!read.ok) {
      err << prefix << read.error << "\n";
      all_ok = false;
      continue;
    }
    reads.push_back(std::move(read));
  }
  if (!all_ok) return std::nullopt;
  std::vector<analysis::ProfileInput> inputs;
  for (size_t i = 0; i < reads.size(); ++i) {
    inputs.push_back({&reads[i].profile, files[i]});
  }
  return analysis::ProfileTree::FromProfiles(inputs);
}

}  // namespace deepcontext::cli
