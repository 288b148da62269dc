#include "tools/analyzer/analyzer.h"

#include <algorithm>
#include <utility>

#include "tools/analyzer/profile_view.h"
#include "tools/analyzer/rule.h"

namespace deepcontext::analyzer {

namespace {

void DropSmall(std::vector<Finding>& findings, const Thresholds& thresholds) {
  std::erase_if(findings, [&](const Finding& f) {
    if (f.benefit.peak_bytes > 0) {
      return f.benefit.BytesShare() < thresholds.memory_holder_share;
    }
    return f.benefit.basis_ns > 0 &&
           f.benefit.ShareHigh() < thresholds.min_benefit_share;
  });
}

}  // namespace

Analysis Analyze(const analysis::ProfileTree& tree,
                 const Thresholds& thresholds,
                 const std::vector<std::string>& only) {
  ProfileView view(tree);
  Analysis result;
  result.basis_ns = view.BasisNs();
  result.basis = view.BasisName();
  for (const Rule& rule : BuiltinRules()) {
    if (!only.empty() &&
        std::find(only.begin(), only.end(), rule.id) == only.end()) {
      continue;
    }
    RuleOutcome outcome = rule.check(view, thresholds);
    if (!outcome.skipped.empty()) {
      result.skipped.push_back({rule.id, outcome.skipped});
      continue;
    }
    result.rules_run.push_back(rule.id);
    for (Finding& finding : outcome.findings) {
      result.findings.push_back(std::move(finding));
    }
  }
  DropSmall(result.findings, thresholds);
  RankFindings(result.findings);
  return result;
}

void MergeFindings(Analysis& analysis, std::vector<Finding> extra,
                   const Thresholds& thresholds) {
  DropSmall(extra, thresholds);
  for (Finding& finding : extra)
    analysis.findings.push_back(std::move(finding));
  RankFindings(analysis.findings);
}

}  // namespace deepcontext::analyzer
