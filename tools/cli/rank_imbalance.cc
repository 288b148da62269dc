#include "tools/cli/rank_imbalance.h"

#include "format/dctx_file.h"
#include "tools/analysis/metric_selection.h"
#include "tools/analysis/profile_tree.h"
#include "tools/merge/rank_merger.h"
#include "tools/report/imbalance_section.h"
#include "tools/report/section_context.h"

namespace deepcontext::cli {

std::string RankImbalanceOfFiles(const std::vector<std::string>& files,
                                 const report::ReportOptions& options) {
  if (files.size() < 2 || options.top <= 0) return "";
  merge::RankMerger merger;
  for (const std::string& path : files) {
    StatusOr<format::Profile> read = format::ReadProfileFile(path);
    if (!read.ok() || read->Metadata("rank").empty()) return "";
    if (!merger.Add(*read, path).ok()) return "";
  }
  if (merger.rank_count() < 2) return "";
  analysis::ProfileTree tree = analysis::ProfileTree::FromProfile(merger.Finish());
  StatusOr<analysis::MetricIndex> lookup =
      analysis::ResolveMetric(tree, options.metric);
  if (!lookup.ok()) return "";
  report::SectionContext context{tree, options};
  context.SelectMetric(*lookup);
  std::string section = report::RenderImbalance(context);
  return section.empty() ? "" : "\n" + section;
}

}  // namespace deepcontext::cli
