// `deepcontext diff` output: a text table of the contexts that changed most,
// or the whole comparison as JSON.
#pragma once

#include <cstddef>
#include <string>

#include "tools/analysis/profile_tree.h"
#include "tools/diff/profile_diff.h"

namespace deepcontext::diff {

struct DiffOptions {
  std::string before_name;  // shown as "Before:"
  std::string after_name;
  size_t metric = 0;  // index into ProfileDiff::metrics
  size_t top = 20;    // text rows; 0 = every changed context
  size_t width = 0;   // maximum line width, 0 = unlimited
};

// The text report: totals of every metric, then the contexts ranked by the
// change of their exclusive value of options.metric, added and removed ones
// included and marked.
std::string RenderDiffText(const analysis::ProfileTree& before,
                           const analysis::ProfileTree& after,
                           const ProfileDiff& diff, const DiffOptions& options);

// JSON ("deepcontext-diff" schema, version 1): the metrics with their
// totals, and every context whose value of any metric changed, ranked by
// options.metric, each with its path of frames, status and, per metric,
// exclusive and inclusive before/after/change/relative. top is ignored.
std::string RenderDiffJson(const analysis::ProfileTree& before,
                           const analysis::ProfileTree& after,
                           const ProfileDiff& diff, const DiffOptions& options);

}  // namespace deepcontext::diff
