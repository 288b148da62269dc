// Runs the built-in rules over a calling context tree and ranks what they
// find by estimated benefit.
#pragma once

#include <string>
#include <vector>

#include "tools/analysis/profile_tree.h"
#include "tools/analyzer/finding.h"
#include "tools/analyzer/thresholds.h"

namespace deepcontext::analyzer {

struct SkippedRule {
  std::string rule_id;
  std::string reason;
};

struct Analysis {
  std::vector<Finding> findings;       // ranked, best first
  std::vector<std::string> rules_run;  // ids of the rules that checked
  std::vector<SkippedRule> skipped;    // rules that could not check, and why
  double basis_ns = 0;                 // what benefit shares refer to
  std::string basis;
};

// Runs every built-in rule (or only those whose id is in `only`, when not
// empty), drops findings below thresholds.min_benefit_share (memory
// findings: below memory_holder_share of the peak) and ranks the rest.
Analysis Analyze(const analysis::ProfileTree& tree,
                 const Thresholds& thresholds = {},
                 const std::vector<std::string>& only = {});

// Adds findings from elsewhere (user rules) and ranks everything again;
// the benefit filter applies to them too.
void MergeFindings(Analysis& analysis, std::vector<Finding> extra,
                   const Thresholds& thresholds = {});

}  // namespace deepcontext::analyzer
