#include "tools/merge/imbalance.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "tools/merge/rank_columns.h"

namespace deepcontext::merge {

namespace {

size_t RankCount(const analysis::ProfileTree& tree) {
  if (tree.sources().size() != 1) return 0;
  const std::string text =
      tree.sources()[0].Metadata(std::string(kMergedRanksKey));
  size_t ranks = 0;
  auto [ptr, error] =
      std::from_chars(text.data(), text.data() + text.size(), ranks);
  if (error != std::errc() || ptr != text.data() + text.size()) return 0;
  return ranks;
}

std::optional<analysis::NodeIndex> PythonLine(const analysis::ProfileTree& tree,
                                              analysis::NodeIndex node) {
  while (node != analysis::ProfileTree::kRootNode) {
    if (tree.frame_of(node).kind == format::FrameKind::kPythonFrame) {
      return node;
    }
    node = tree.node(node).parent;
  }
  return std::nullopt;
}

}  // namespace

bool IsMergedProfile(const analysis::ProfileTree& tree) {
  return RankCount(tree) > 0;
}

std::optional<ImbalanceView> FindImbalance(const analysis::ProfileTree& tree,
                                           analysis::MetricIndex metric,
                                           size_t n) {
  const size_t ranks = RankCount(tree);
  if (ranks == 0 || metric >= tree.metrics().size()) return std::nullopt;
  const std::string& name = tree.metrics()[metric].name;
  auto spread = tree.FindMetric(name + std::string(kRanksSuffix));
  auto median = tree.FindMetric(name + std::string(kMedianSuffix));
  auto slowest = tree.FindMetric(name + std::string(kSlowestSuffix));
  if (!spread || !median || !slowest) return std::nullopt;

  ImbalanceView view;
  view.ranks = ranks;
  for (analysis::NodeIndex node = 1; node < tree.size(); ++node) {
    const analysis::MetricStats& stats = tree.stats(node, *spread);
    if (stats.count == 0) continue;
    ImbalancedContext context;
    context.node = node;
    context.min = stats.min;
    context.max = stats.max;
    context.median = tree.Exclusive(node, *median);
    context.slowest_rank =
        static_cast<long long>(tree.Exclusive(node, *slowest));
    context.ranks_with_context = stats.count;
    if (context.Excess() <= 0) continue;
    view.contexts.push_back(context);
  }
  const size_t keep = std::min(n, view.contexts.size());
  std::partial_sort(view.contexts.begin(), view.contexts.begin() + keep,
                    view.contexts.end(),
                    [](const ImbalancedContext& a, const ImbalancedContext& b) {
                      if (a.Excess() != b.Excess()) return a.Excess() > b.Excess();
                      return a.node < b.node;
                    });
  view.contexts.resize(keep);
  for (ImbalancedContext& context : view.contexts) {
    context.python_line = PythonLine(tree, context.node);
  }
  return view;
}

}  // namespace deepcontext::merge
