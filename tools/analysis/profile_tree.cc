#include "tools/analysis/profile_tree.h"

#include <algorithm>
#include <unordered_map>

namespace deepcontext::analysis {

namespace {

constexpr NodeIndex kUnmapped = UINT32_MAX;

// Returns the last path component, so process labels stay short.
std::string BaseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void MergeSample(const format::MetricValue& value, MetricStats& stats) {
  if (stats.count == 0 && stats.sum == 0) {
    stats.min = value.min;
    stats.max = value.max;
  } else {
    stats.min = std::min(stats.min, value.min);
    stats.max = std::max(stats.max, value.max);
  }
  stats.sum += value.sum;
  stats.count += value.count;
}

}  // namespace

std::string SourceInfo::Metadata(std::string_view key) const {
  for (const auto& [k, v] : metadata) {
    if (k == key) return v;
  }
  return "";
}

std::string ProcessLabel(const SourceInfo& source, size_t index) {
  std::string label = "process";
  std::string pid = source.Metadata("pid");
  std::string rank = source.Metadata("rank");
  std::string file = BaseName(source.path);
  if (!pid.empty()) label += " " + pid;
  if (!rank.empty()) label += " rank " + rank;
  if (!file.empty()) label += " (" + file + ")";
  if (pid.empty() && file.empty()) label += " #" + std::to_string(index + 1);
  return label;
}

// Accumulates profiles into the vectors of a ProfileTree. Kept out of the
// header because the lookup tables are only needed while building.
class ProfileTree::Builder {
 public:
  explicit Builder(const std::vector<ProfileInput>& inputs) : inputs_(inputs) {}

  ProfileTree Build() {
    CollectMetrics();
    InternFrame(Frame{});
    AddNode(kRootNode, 0);
    bool separate = inputs_.size() > 1;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      SourceInfo source{inputs_[i].source, {}};
      if (inputs_[i].profile != nullptr) {
        source.metadata = inputs_[i].profile->metadata;
      }
      NodeIndex top = kRootNode;
      if (separate) {
        // Always a fresh node, even if two inputs produce the same label:
        // merging two processes would hide one of them.
        Frame process{format::FrameKind::kProcess, ProcessLabel(source, i), "",
                      0};
        top = AddNode(kRootNode, InternFrame(process));
      }
      tree_.sources_.push_back(std::move(source));
      if (inputs_[i].profile != nullptr) {
        AddProfile(*inputs_[i].profile, metric_maps_[i], top);
      }
    }
    ComputeInclusive();
    return std::move(tree_);
  }

 private:
  // Metrics must be known before nodes are added because stats_ is laid out
  // node-major with one slot per metric.
  void CollectMetrics() {
    std::unordered_map<std::string, MetricIndex> by_name;
    for (const ProfileInput& input : inputs_) {
      std::vector<MetricIndex>& map = metric_maps_.emplace_back();
      if (input.profile == nullptr) continue;
      for (const format::MetricDescriptor& d : input.profile->metrics) {
        auto [it, inserted] = by_name.emplace(d.name, tree_.metrics_.size());
        if (inserted) {
          tree_.metrics_.push_back(MetricInfo{d.name, d.unit, d.description});
        }
        map.push_back(it->second);
      }
    }
  }

  FrameId InternFrame(const Frame& frame) {
    auto [it, inserted] =
        frame_ids_.emplace(frame, static_cast<FrameId>(tree_.frames_.size()));
    if (inserted) tree_.frames_.push_back(frame);
    return it->second;
  }

  NodeIndex AddNode(NodeIndex parent, FrameId frame) {
    auto index = static_cast<NodeIndex>(tree_.nodes_.size());
    TreeNode node;
    node.frame = frame;
    node.parent = parent;
    if (index != kRootNode) {
      node.depth = tree_.nodes_[parent].depth + 1;
      tree_.nodes_[parent].children.push_back(index);
    }
    tree_.nodes_.push_back(std::move(node));
    tree_.stats_.resize(tree_.stats_.size() + tree_.metrics_.size());
    return index;
  }

  NodeIndex GetOrAddChild(NodeIndex parent, FrameId frame) {
    uint64_t key = (static_cast<uint64_t>(parent) << 32) | frame;
    auto it = child_ids_.find(key);
    if (it != child_ids_.end()) return it->second;
    NodeIndex child = AddNode(parent, frame);
    child_ids_.emplace(key, child);
    return child;
  }

  void AddProfile(const format::Profile& profile,
                  const std::vector<MetricIndex>& metric_map, NodeIndex top) {
    const size_t n = profile.nodes.size();
    if (n == 0) return;
    auto str = [&profile](format::StringId id) -> const std::string& {
      static const std::string kEmpty;
      return id < profile.strings.size() ? profile.strings[id] : kEmpty;
    };
    // Every node has one parent, so walking down from the root reaches each
    // node at most once; nodes in parent cycles are simply never reached.
    std::vector<std::vector<format::NodeId>> children(n);
    for (format::NodeId i = 1; i < n; ++i) {
      format::NodeId parent = profile.nodes[i].parent;
      if (parent < n && parent != i) children[parent].push_back(i);
    }
    std::vector<NodeIndex> mapped(n, kUnmapped);
    mapped[0] = top;
    std::vector<format::NodeId> stack{0};
    while (!stack.empty()) {
      format::NodeId id = stack.back();
      stack.pop_back();
      for (format::NodeId child : children[id]) {
        const format::Node& node = profile.nodes[child];
        Frame frame{node.kind, str(node.name), str(node.file), node.line};
        mapped[child] = GetOrAddChild(mapped[id], InternFrame(frame));
        stack.push_back(child);
      }
    }
    for (const format::MetricValue& value : profile.values) {
      if (value.node >= n || mapped[value.node] == kUnmapped) continue;
      if (value.metric >= metric_map.size()) continue;
      MetricIndex metric = metric_map[value.metric];
      MergeSample(value, tree_.stats_[static_cast<size_t>(mapped[value.node]) *
                                          tree_.metrics_.size() +
                                      metric]);
    }
  }

  // Children always have larger indices than their parents, so one reverse
  // sweep folds every subtree into its root.
  void ComputeInclusive() {
    const size_t m = tree_.metrics_.size();
    for (MetricStats& stats : tree_.stats_) stats.inclusive = stats.sum;
    for (size_t i = tree_.nodes_.size(); i-- > 1;) {
      size_t parent = tree_.nodes_[i].parent;
      for (size_t k = 0; k < m; ++k) {
        tree_.stats_[parent * m + k].inclusive +=
            tree_.stats_[i * m + k].inclusive;
      }
    }
  }

  const std::vector<ProfileInput>& inputs_;
  ProfileTree tree_;
  std::vector<std::vector<MetricIndex>> metric_maps_;
  std::unordered_map<Frame, FrameId, FrameHash> frame_ids_;
  std::unordered_map<uint64_t, NodeIndex> child_ids_;
};

ProfileTree ProfileTree::FromProfile(const format::Profile& profile,
                                     const std::string& source) {
  return FromProfiles({ProfileInput{&profile, source}});
}

ProfileTree ProfileTree::FromProfiles(const std::vector<ProfileInput>& inputs) {
  return Builder(inputs).Build();
}

std::optional<MetricIndex> ProfileTree::FindMetric(
    std::string_view name) const {
  for (MetricIndex i = 0; i < metrics_.size(); ++i) {
    if (metrics_[i].name == name) return i;
  }
  return std::nullopt;
}

bool ProfileTree::HasSamples(MetricIndex metric) const {
  for (NodeIndex i = 0; i < nodes_.size(); ++i) {
    const MetricStats& s = stats(i, metric);
    if (s.count > 0 || s.sum != 0) return true;
  }
  return false;
}

}  // namespace deepcontext::analysis
