#include "tools/merge/merge_files.h"

#include "format/dctx_file.h"
#include "tools/merge/rank_merger.h"

namespace deepcontext::merge {

StatusOr<MergeSummary> MergeProfileFiles(const std::vector<std::string>& paths,
                                         const std::string& output) {
  if (paths.empty()) return Status::Error("no profiles to merge");
  RankMerger merger;
  for (const std::string& path : paths) {
    // Scoped so that each input is freed before the next one is read.
    StatusOr<format::Profile> read = format::ReadProfileFile(path);
    if (!read.ok()) return read.status();
    Status added = merger.Add(*read, path);
    if (!added.ok()) return added;
  }
  MergeSummary summary;
  summary.ranks = merger.rank_count();
  summary.processes = merger.process_count();
  format::Profile merged = merger.Finish();
  summary.contexts = merged.nodes.size();
  if (Status written = format::WriteProfileFile(merged, output);
      !written.ok()) {
    return written;
  }
  return summary;
}

}  // namespace deepcontext::merge
