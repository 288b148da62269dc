#include "tools/analysis/bottom_up.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

namespace deepcontext::analysis {

// Builds the tree depth first. Each pending node carries the call paths
// ("instances") that reach it: the tree node its frame came from plus the
// leaf's value. Expanding a node groups its instances by the caller of that
// tree node. Pending nodes on the stack never share an instance, so memory
// stays proportional to the number of leaves, not leaves times depth.
class BottomUpTree::Builder {
 public:
  Builder(const ProfileTree& tree, MetricIndex metric,
          std::optional<MetricIndex> calls_metric, const BottomUpLimits& limits)
      : tree_(tree),
        metric_(metric),
        calls_metric_(calls_metric),
        limits_(limits) {}

  BottomUpTree Build() {
    result_.nodes_.push_back(
        CallerNode{tree_.node(ProfileTree::kRootNode).frame});
    std::vector<Instance> leaves;
    for (NodeIndex n = 0; n < tree_.size(); ++n) {
      double value = tree_.Exclusive(n, metric_);
      if (value == 0) continue;
      double calls = calls_metric_ ? tree_.Exclusive(n, *calls_metric_) : 0;
      leaves.push_back({n, value, calls});
      result_.nodes_[kRootNode].value += value;
      result_.nodes_[kRootNode].calls += calls;
    }
    AddChildren(kRootNode, leaves, /*from_leaves=*/true);
    while (!pending_.empty()) {
      auto [node, instances] = std::move(pending_.back());
      pending_.pop_back();
      AddChildren(node, instances, /*from_leaves=*/false);
    }
    return std::move(result_);
  }

 private:
  struct Instance {
    NodeIndex at;  // tree node whose frame the bottom-up node shows
    double value;
    double calls;
  };

  // Creates the children of parent from its instances: the leaves
  // themselves for the virtual root, otherwise each instance's caller.
  void AddChildren(uint32_t parent, std::vector<Instance>& instances,
                   bool from_leaves) {
    std::unordered_map<FrameId, uint32_t> by_frame;
    std::vector<std::vector<Instance>> grouped;
    std::vector<uint32_t> created;
    steps_ += instances.size();
    for (Instance instance : instances) {
      if (!from_leaves) {
        if (instance.at == ProfileTree::kRootNode) continue;
        instance.at = tree_.node(instance.at).parent;
        // The tree root is no caller anyone needs to see.
        if (instance.at == ProfileTree::kRootNode) continue;
      }
      FrameId frame = tree_.node(instance.at).frame;
      auto [it, inserted] = by_frame.emplace(frame, created.size());
      if (inserted) {
        CallerNode node;
        node.frame = frame;
        node.parent = parent;
        node.depth = result_.nodes_[parent].depth + 1;
        created.push_back(static_cast<uint32_t>(result_.nodes_.size()));
        result_.nodes_.push_back(std::move(node));
        grouped.emplace_back();
      }
      CallerNode& node = result_.nodes_[created[it->second]];
      node.value += instance.value;
      node.calls += instance.calls;
      grouped[it->second].push_back(instance);
    }
    instances.clear();
    instances.shrink_to_fit();

    std::vector<uint32_t> order(created.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return result_.nodes_[created[a]].value >
             result_.nodes_[created[b]].value;
    });
    std::vector<uint32_t>& children = result_.nodes_[parent].children;
    for (uint32_t i : order) children.push_back(created[i]);
    // Pushed in reverse so the largest child is expanded first.
    for (size_t k = order.size(); k-- > 0;) {
      uint32_t child = created[order[k]];
      CallerNode& node = result_.nodes_[child];
      bool too_small = std::fabs(node.value) < limits_.min_value;
      bool too_deep = limits_.max_depth > 0 && node.depth >= limits_.max_depth;
      bool too_many =
          (limits_.max_nodes > 0 &&
           result_.nodes_.size() >= limits_.max_nodes) ||
          (limits_.max_steps > 0 && steps_ >= limits_.max_steps);
      if (too_small || too_deep || too_many) {
        node.expanded = !HasCaller(grouped[order[k]]);
        if (!too_small && !too_deep && !node.expanded) {
          result_.truncated_ = true;
        }
        continue;
      }
      pending_.emplace_back(child, std::move(grouped[order[k]]));
    }
  }

  bool HasCaller(const std::vector<Instance>& instances) const {
    for (const Instance& instance : instances) {
      if (instance.at != ProfileTree::kRootNode &&
          tree_.node(instance.at).parent != ProfileTree::kRootNode) {
        return true;
      }
    }
    return false;
  }

  const ProfileTree& tree_;
  MetricIndex metric_;
  std::optional<MetricIndex> calls_metric_;
  BottomUpLimits limits_;
  BottomUpTree result_;
  size_t steps_ = 0;  // instances moved to their callers so far
  std::vector<std::pair<uint32_t, std::vector<Instance>>> pending_;
};

BottomUpTree BottomUpTree::Build(const ProfileTree& tree, MetricIndex metric,
                                 std::optional<MetricIndex> calls_metric,
                                 const BottomUpLimits& limits) {
  return Builder(tree, metric, calls_metric, limits).Build();
}

}  // namespace deepcontext::analysis
