// A rule: a pure function from a profile to findings. Rules say why they did
// not run (a metric the profile lacks) instead of staying silent, so a user
// can tell "checked and fine" from "could not check".
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "tools/analyzer/finding.h"
#include "tools/analyzer/profile_view.h"
#include "tools/analyzer/thresholds.h"

namespace deepcontext::analyzer {

struct RuleOutcome {
  std::vector<Finding> findings;
  std::string skipped;  // why the rule could not check, "" when it ran
};

using RuleCheck = RuleOutcome (*)(const ProfileView& view,
                                  const Thresholds& thresholds);

struct Rule {
  const char* id;
  const char* summary;  // one line for `deepcontext analyze --list-rules`
  RuleCheck check;
};

// Starts a finding of rule at node with a benefit range in ns of the view's
// basis time; severity follows the upper share.
Finding MakeFinding(const ProfileView& view, const char* rule_id,
                    NodeIndex node, std::string title, double low_ns,
                    double high_ns, std::string method);

// True when a benefit of high_ns reaches thresholds.min_benefit_share of
// the view's basis: rules skip building findings that would be dropped
// (building one walks the node's whole path).
bool WorthReporting(const ProfileView& view, const Thresholds& thresholds,
                    double high_ns);

// Whether a kernel or op name contains part / any of parts: rules classify
// kernels by the words their libraries put in their names.
inline bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}
inline bool ContainsAny(std::string_view text,
                        std::initializer_list<std::string_view> parts) {
  for (std::string_view part : parts) {
    if (Contains(text, part)) return true;
  }
  return false;
}

// Rules over host-side behaviour (rules_host.cc).
RuleOutcome CheckGpuIdle(const ProfileView& view, const Thresholds& t);
RuleOutcome CheckHostDeviceSync(const ProfileView& view, const Thresholds& t);
RuleOutcome CheckPageableCopy(const ProfileView& view, const Thresholds& t);
RuleOutcome CheckLaunchBound(const ProfileView& view, const Thresholds& t);
// Rules over framework operators (rules_ops.cc).
RuleOutcome CheckUnfusedElementwise(const ProfileView& view,
                                    const Thresholds& t);
RuleOutcome CheckForwardBackwardImbalance(const ProfileView& view,
                                          const Thresholds& t);
RuleOutcome CheckSlowOptimizer(const ProfileView& view, const Thresholds& t);
RuleOutcome CheckZeroGradFill(const ProfileView& view, const Thresholds& t);
// Rules over GPU kernels (rules_kernels.cc).
RuleOutcome CheckTensorCoresUnused(const ProfileView& view,
                                   const Thresholds& t);
RuleOutcome CheckLowOccupancy(const ProfileView& view, const Thresholds& t);
// Stall reasons of sampled kernels (rules_stalls.cc).
RuleOutcome CheckGpuStalls(const ProfileView& view, const Thresholds& t);
// Hardware counters of measured kernels (rules_counters.cc).
RuleOutcome CheckGpuCounters(const ProfileView& view, const Thresholds& t);
// Rules about device memory (rules_memory.cc).
RuleOutcome CheckMemoryPeak(const ProfileView& view, const Thresholds& t);

// Every built-in rule, in a fixed order.
const std::vector<Rule>& BuiltinRules();

}  // namespace deepcontext::analyzer
