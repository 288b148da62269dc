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
    format::ReadResult read = format::ReadProfileFile(path);
    if (!read.ok) return Status::Error(read.error);
    Status added = merger.Add(read.profile, path);
    if (!added.ok()) return added;
  }
  MergeSummary summary;
  summary.ranks = merger.rank_count();
  summary.processes = merger.process_count();
  format::Profile merged = merger.Finish();
  summary.contexts = merged.nodes.size();
  std::string error = format::WriteProfileFile(merged, output);
  if (!error.empty()) return Status::Error(error);
  return summary;
}

}  // namespace deepcontext::merge
