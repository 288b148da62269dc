#include "tools/diff/profile_diff.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "tools/analysis/metric_selection.h"
#include "tools/merge/rank_columns.h"
#include "tools/merge/rank_merger.h"

namespace deepcontext::diff {

namespace {

using analysis::Frame;
using analysis::NodeIndex;
using analysis::ProfileTree;

// The frame as it is matched between runs.
Frame MatchKey(const Frame& frame) {
  Frame key = frame;
  if (key.kind == format::FrameKind::kThread) {
    key.name = merge::MergedThreadName(key.name);
  }
  return key;
}

class Differ {
 public:
  Differ(const ProfileTree& before, const ProfileTree& after)
      : before_(before), after_(after) {}

  ProfileDiff Run() {
    // The per-rank companion metrics of merged profiles do not add up over
    // a tree; the job's totals are in the base metrics.
    for (size_t i = 0; i < before_.metrics().size(); ++i) {
      if (merge::IsRankColumn(before_.metrics()[i].name)) continue;
      diff_.metrics.push_back({before_.metrics()[i].name,
                               before_.metrics()[i].unit, i, std::nullopt});
    }
    for (size_t i = 0; i < after_.metrics().size(); ++i) {
      if (merge::IsRankColumn(after_.metrics()[i].name)) continue;
      std::optional<size_t> known = diff_.FindMetric(after_.metrics()[i].name);
      if (known) {
        diff_.metrics[*known].after = i;
      } else {
        diff_.metrics.push_back({after_.metrics()[i].name,
                                 after_.metrics()[i].unit, std::nullopt, i});
      }
    }
    for (const DiffMetric& metric : diff_.metrics) {
      diff_.before_totals.push_back(metric.before ? before_.Total(*metric.before) : 0);
      diff_.after_totals.push_back(metric.after ? after_.Total(*metric.after) : 0);
    }
    Match(ProfileTree::kRootNode, ProfileTree::kRootNode);
    return std::move(diff_);
  }

 private:
  // Records the children of a matched pair, then descends.
  void Match(NodeIndex before, NodeIndex after) {
    std::unordered_map<Frame, NodeIndex, analysis::FrameHash> after_children;
    for (NodeIndex child : after_.node(after).children) {
      after_children.emplace(MatchKey(after_.frame_of(child)), child);
    }
    for (NodeIndex child : before_.node(before).children) {
      auto found = after_children.find(MatchKey(before_.frame_of(child)));
      if (found == after_children.end()) {
        OneSided(child, /*in_before=*/true);
        continue;
      }
      NodeIndex other = found->second;
      after_children.erase(found);
      Add(child, other, ContextStatus::kChanged);
      Match(child, other);
    }
    // In the after tree's order, so the output does not depend on hashing.
    for (NodeIndex child : after_.node(after).children) {
      if (after_children.contains(MatchKey(after_.frame_of(child))) &&
          after_children.at(MatchKey(after_.frame_of(child))) == child) {
        OneSided(child, /*in_before=*/false);
      }
    }
  }

  // A subtree present in one profile only.
  void OneSided(NodeIndex node, bool in_before) {
    if (in_before) {
      Add(node, std::nullopt, ContextStatus::kRemoved);
    } else {
      Add(std::nullopt, node, ContextStatus::kAdded);
    }
    const ProfileTree& tree = in_before ? before_ : after_;
    for (NodeIndex child : tree.node(node).children) OneSided(child, in_before);
  }

  void Add(std::optional<NodeIndex> before, std::optional<NodeIndex> after,
           ContextStatus status) {
    ContextDiff context{before, after, status, {}};
    context.metrics.reserve(diff_.metrics.size());
    for (const DiffMetric& metric : diff_.metrics) {
      MetricChange change;
      if (before && metric.before) {
        change.before_exclusive = before_.Exclusive(*before, *metric.before);
        change.before_inclusive = before_.Inclusive(*before, *metric.before);
      }
      if (after && metric.after) {
        change.after_exclusive = after_.Exclusive(*after, *metric.after);
        change.after_inclusive = after_.Inclusive(*after, *metric.after);
      }
      context.metrics.push_back(change);
    }
    diff_.contexts.push_back(std::move(context));
  }

  const ProfileTree& before_;
  const ProfileTree& after_;
  ProfileDiff diff_;
};

}  // namespace

const char* StatusName(ContextStatus status) {
  switch (status) {
    case ContextStatus::kAdded:
      return "added";
    case ContextStatus::kRemoved:
      return "removed";
    case ContextStatus::kChanged:
      break;
  }
  return "changed";
}

std::optional<double> Relative(double before, double after) {
  if (before == 0) return std::nullopt;
  return (after - before) / std::fabs(before);
}

std::optional<size_t> ProfileDiff::FindMetric(const std::string& name) const {
  for (size_t i = 0; i < metrics.size(); ++i) {
    if (metrics[i].name == name) return i;
  }
  return std::nullopt;
}

ProfileDiff DiffProfiles(const analysis::ProfileTree& before,
                         const analysis::ProfileTree& after) {
  return Differ(before, after).Run();
}

std::vector<size_t> RankByChange(const ProfileDiff& diff, size_t metric,
                                 size_t n) {
  std::vector<size_t> ranked;
  for (size_t i = 0; i < diff.contexts.size(); ++i) {
    const MetricChange& change = diff.contexts[i].metrics[metric];
    if (change.ExclusiveChange() != 0) ranked.push_back(i);
  }
  auto larger = [&diff, metric](size_t a, size_t b) {
    double change_a = std::fabs(diff.contexts[a].metrics[metric].ExclusiveChange());
    double change_b = std::fabs(diff.contexts[b].metrics[metric].ExclusiveChange());
    if (change_a != change_b) return change_a > change_b;
    return a < b;
  };
  if (n == 0 || n >= ranked.size()) {
    std::sort(ranked.begin(), ranked.end(), larger);
  } else {
    std::partial_sort(ranked.begin(), ranked.begin() + n, ranked.end(), larger);
    ranked.resize(n);
  }
  return ranked;
}

StatusOr<size_t> ChooseRankMetric(const ProfileDiff& diff,
                                         const analysis::ProfileTree& before,
                                         const analysis::ProfileTree& after,
                                         const std::string& requested) {
  std::optional<size_t> metric;
  if (!requested.empty()) {
    metric = diff.FindMetric(requested);
  } else {
    for (const analysis::ProfileTree* tree : {&after, &before}) {
      if (auto chosen = analysis::DefaultMetric(*tree)) {
        metric = diff.FindMetric(tree->metrics()[*chosen].name);
        break;
      }
    }
  }
  if (metric) return *metric;
  if (requested.empty()) {
    return Status::Error("the profiles contain no metrics");
  }
  std::string names;
  for (const DiffMetric& m : diff.metrics) {
    names += (names.empty() ? "" : ", ") + m.name;
  }
  return Status::Error("unknown metric '" + requested +
                              "'; available metrics: " + names);
}

}  // namespace deepcontext::diff
