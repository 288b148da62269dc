#include "tools/analyzer/finding.h"

#include <algorithm>
#include <tuple>

namespace deepcontext::analyzer {

const char* SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kHigh:
      return "high";
    case Severity::kMedium:
      return "medium";
    case Severity::kLow:
      break;
  }
  return "low";
}

Severity SeverityForShare(double share) {
  if (share >= 0.10) return Severity::kHigh;
  if (share >= 0.03) return Severity::kMedium;
  return Severity::kLow;
}

void RankFindings(std::vector<Finding>& findings) {
  std::stable_sort(
      findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
        return std::make_tuple(-a.benefit.high_ns, -a.benefit.low_ns, a.rule_id,
                               a.context.node) <
               std::make_tuple(-b.benefit.high_ns, -b.benefit.low_ns, b.rule_id,
                               b.context.node);
      });
}

}  // namespace deepcontext::analyzer
