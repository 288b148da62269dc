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
  auto key = [](const Finding& f) {
    return std::make_tuple(-f.benefit.high_ns, -f.benefit.low_ns,
                           -f.benefit.bytes, f.rule_id, f.context.node);
  };
  std::stable_sort(findings.begin(), findings.end(),
                   [&](const Finding& a, const Finding& b) {
                     return key(a) < key(b);
                   });
}

}  // namespace deepcontext::analyzer
