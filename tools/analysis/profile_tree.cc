#include "tools/analysis/profile_tree.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <numeric>
#include <string_view>
#include <unordered_map>

#include "tools/analysis/frame_index.h"

namespace deepcontext::analysis {

namespace {

constexpr NodeIndex kUnmapped = UINT32_MAX;

// Returns the last path component, so process labels stay short.
std::string BaseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
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

ProfileTree::ProfileTree() = default;
ProfileTree::~ProfileTree() = default;

// Accumulates profiles into the vectors of a ProfileTree. The tree is built
// by expanding one tree node at a time: the source nodes that map to it
// (one, unless a writer emitted a frame twice under one parent) give its
// children, which are created together so that each node's children are
// consecutive indices. No lookup table is kept per node, so building costs
// a few bytes per node beyond the tree itself.
class ProfileTree::Builder {
 public:
  // owned, when given, holds the profiles inputs point to, which the
  // builder may then take apart.
  Builder(const std::vector<ProfileInput>& inputs,
          std::vector<format::Profile>* owned)
      : inputs_(inputs), owned_(owned) {}

  ProfileTree Build() {
    CollectMetrics();
    InternFrame(Frame{});
    AddNode(kRootNode, 0);
    const bool separate = inputs_.size() > 1;
    std::vector<NodeIndex> tops;
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
      tops.push_back(top);
      tree_.sources_.push_back(std::move(source));
    }
    if (separate) {
      child_ranges_[kRootNode] = {1, static_cast<uint32_t>(inputs_.size())};
    }
    mapped_.resize(inputs_.size());
    size_t total_nodes = tree_.nodes_.size();
    for (const ProfileInput& input : inputs_) {
      if (input.profile != nullptr) total_nodes += input.profile->nodes.size();
    }
    tree_.nodes_.reserve(total_nodes);
    child_ranges_.reserve(total_nodes);
    // A profile has at most one frame per node. Reserving that many takes
    // address space, not memory, until frames are added.
    tree_.frames_.reserve(total_nodes);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (inputs_[i].profile == nullptr) continue;
      AddProfile(*inputs_[i].profile, tops[i], mapped_[i],
                 owned_ != nullptr ? &(*owned_)[i] : nullptr);
    }
    tree_.nodes_.shrink_to_fit();
    // Where frames are few per node, the reserve above would be mostly
    // unused; moving the frames out of it is then cheap.
    if (tree_.frames_.size() * 4 < tree_.frames_.capacity()) {
      tree_.frames_.shrink_to_fit();
    }
    FinishChildren();
    AddValues();
    tree_.valued_nodes_.assign(tree_.metrics_.size(), 0);
    for (const ExclusiveEntry& entry : tree_.entries_) {
      ++tree_.valued_nodes_[entry.metric];
    }
    tree_.inclusive_.resize(tree_.metrics_.size());
    for (auto& column : tree_.inclusive_) {
      column = std::make_unique<LazyColumn>();
    }
    return std::move(tree_);
  }

 private:
  // A tree node and the source nodes (of the profile being added) that
  // resolve to it.
  struct Group {
    NodeIndex node;
    format::NodeId single;
    std::vector<format::NodeId> more;  // only when siblings were merged
  };

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

  // The id of text in the pool of distinct strings; text must outlive the
  // builder (it points into an input profile or into owned_strings_).
  uint32_t StringIndex(std::string_view text) {
    return string_ids_.emplace(text, static_cast<uint32_t>(string_ids_.size()))
        .first->second;
  }

  FrameId InternFrame(const FrameKey& key, const std::string& name,
                      const std::string& file) {
    bool added = false;
    const FrameId id = frame_index_.Intern(key, &added);
    if (added) tree_.frames_.emplace_back(key.kind, name, file, key.line);
    return id;
  }

  // Interns a frame the inputs do not spell (the root, process labels).
  FrameId InternFrame(const Frame& frame) {
    owned_strings_.push_back(frame.name);
    owned_strings_.push_back(frame.file);
    const FrameKey key{frame.kind,
                       StringIndex(owned_strings_[owned_strings_.size() - 2]),
                       StringIndex(owned_strings_.back()), frame.line};
    return InternFrame(key, frame.name, frame.file);
  }

  NodeIndex AddNode(NodeIndex parent, FrameId frame) {
    auto index = static_cast<NodeIndex>(tree_.nodes_.size());
    TreeNode node;
    node.frame = frame;
    node.parent = parent;
    if (index != kRootNode) node.depth = tree_.nodes_[parent].depth + 1;
    tree_.nodes_.push_back(node);
    child_ranges_.emplace_back(0, 0);
    return index;
  }

  // Resolves every node of profile to a FrameId; strings are compared by
  // content once per string, not once per node.
  std::vector<FrameId> ResolveFrames(const format::Profile& profile) {
    std::vector<uint32_t> pooled(profile.strings.size());
    for (size_t i = 0; i < profile.strings.size(); ++i) {
      pooled[i] = StringIndex(profile.strings[i]);
    }
    static const std::string kEmpty;
    auto str = [&profile](format::StringId id) -> const std::string& {
      return id < profile.strings.size() ? profile.strings[id] : kEmpty;
    };
    const uint32_t empty = StringIndex(kEmpty);
    auto pool = [&](format::StringId id) {
      return id < pooled.size() ? pooled[id] : empty;
    };
    auto key_of = [&](const format::Node& node) {
      return FrameKey{node.kind, pool(node.name), pool(node.file), node.line};
    };
    const std::vector<uint32_t> first_alike = FirstEqualKeys(
        profile.nodes, static_cast<uint32_t>(string_ids_.size()), key_of);
    // Frames are numbered in the order their first node comes, as the
    // views list them. Each distinct frame of the profile is looked up once
    // among the frames known before it (the root, process labels, earlier
    // profiles); that table is small for a single profile.
    frame_index_.IndexAppended();
    std::vector<FrameId> frames(profile.nodes.size(), 0);
    for (size_t i = 1; i < profile.nodes.size(); ++i) {
      if (first_alike[i] != i) {
        frames[i] = frames[first_alike[i]];
        continue;
      }
      const format::Node& node = profile.nodes[i];
      const FrameKey key = key_of(node);
      FrameId id = frame_index_.Find(key);
      if (id == FrameIndex::kNone) {
        id = frame_index_.Append(key);
        tree_.frames_.emplace_back(key.kind, str(node.name), str(node.file),
                                   key.line);
      }
      frames[i] = id;
    }
    return frames;
  }

  // owned, when given, is profile itself, whose nodes are released as soon
  // as the frames and children have been read from them.
  void AddProfile(const format::Profile& profile, NodeIndex top,
                  std::vector<NodeIndex>& mapped, format::Profile* owned) {
    const size_t n = profile.nodes.size();
    if (n == 0) return;
    const std::vector<FrameId> frames = ResolveFrames(profile);
    // Children of each source node in index order (compressed rows). Every
    // node has one parent, so walking down from the root reaches each node
    // at most once; nodes in parent cycles are simply never reached.
    std::vector<uint32_t> first_child(n + 1, 0);
    for (size_t i = 1; i < n; ++i) {
      const format::NodeId parent = profile.nodes[i].parent;
      if (parent < n && parent != i) ++first_child[parent + 1];
    }
    for (size_t i = 0; i < n; ++i) first_child[i + 1] += first_child[i];
    std::vector<format::NodeId> children(first_child[n]);
    {
      std::vector<uint32_t> next(first_child.begin(), first_child.end() - 1);
      for (size_t i = 1; i < n; ++i) {
        const format::NodeId parent = profile.nodes[i].parent;
        if (parent < n && parent != i) {
          children[next[parent]++] = static_cast<format::NodeId>(i);
        }
      }
    }
    if (owned != nullptr) std::vector<format::Node>().swap(owned->nodes);
    mapped.assign(n, kUnmapped);
    mapped[0] = top;
    std::vector<Group> stack;
    stack.push_back(Group{top, 0, {}});
    std::vector<format::NodeId> gathered;
    std::vector<std::pair<FrameId, uint32_t>> order;
    while (!stack.empty()) {
      Group group = std::move(stack.back());
      stack.pop_back();
      gathered.clear();
      auto gather = [&](format::NodeId source) {
        gathered.insert(gathered.end(), children.begin() + first_child[source],
                        children.begin() + first_child[source + 1]);
      };
      gather(group.single);
      for (format::NodeId source : group.more) gather(source);
      if (gathered.empty()) continue;
      ExpandGroup(group.node, gathered, frames, mapped, stack, order);
    }
  }

  // Creates the children of node from the source children gathered for it,
  // one per distinct frame in first-seen order, and queues their groups.
  void ExpandGroup(NodeIndex node, const std::vector<format::NodeId>& gathered,
                   const std::vector<FrameId>& frames,
                   std::vector<NodeIndex>& mapped, std::vector<Group>& stack,
                   std::vector<std::pair<FrameId, uint32_t>>& order) {
    const auto first = static_cast<NodeIndex>(tree_.nodes_.size());
    const size_t stack_base = stack.size();
    // Sorting (frame, position) finds repeated frames in O(k log k); the
    // first position of each frame decides its child's place.
    order.clear();
    for (uint32_t k = 0; k < gathered.size(); ++k) {
      order.emplace_back(frames[gathered[k]], k);
    }
    std::sort(order.begin(), order.end());
    // The position of each frame's first occurrence, marking repeats.
    std::vector<uint32_t>& leader = leader_scratch_;
    leader.assign(gathered.size(), UINT32_MAX);
    for (size_t k = 0; k < order.size(); ++k) {
      const bool repeat = k > 0 && order[k].first == order[k - 1].first;
      leader[order[k].second] =
          repeat ? leader[order[k - 1].second] : order[k].second;
    }
    for (uint32_t k = 0; k < gathered.size(); ++k) {
      const format::NodeId source = gathered[k];
      if (leader[k] == k) {
        const NodeIndex child = AddNode(node, frames[source]);
        mapped[source] = child;
        stack.push_back(Group{child, source, {}});
      } else {
        const NodeIndex child = mapped[gathered[leader[k]]];
        mapped[source] = child;
        stack[stack_base + (child - first)].more.push_back(source);
      }
    }
    child_ranges_[node] = {first,
                           static_cast<uint32_t>(tree_.nodes_.size() - first)};
  }

  // Gathers every value, renumbered to tree nodes and metrics, and sorts
  // them by node. Owned profiles hand their values over, so the entries
  // take no memory beyond what the profiles already held.
  void AddValues() {
    std::vector<ExclusiveEntry>& entries = tree_.entries_;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (inputs_[i].profile == nullptr) continue;
      std::vector<format::MetricValue> taken;
      if (owned_ != nullptr) {
        taken = std::move((*owned_)[i].values);
      } else {
        taken = inputs_[i].profile->values;
      }
      const std::vector<NodeIndex>& mapped = mapped_[i];
      const std::vector<MetricIndex>& metric_map = metric_maps_[i];
      std::erase_if(taken, [&](format::MetricValue& value) {
        if (value.node >= mapped.size() || mapped[value.node] == kUnmapped ||
            value.metric >= metric_map.size()) {
          return true;
        }
        value.node = mapped[value.node];
        value.metric = static_cast<uint32_t>(metric_map[value.metric]);
        return false;
      });
      std::vector<NodeIndex>().swap(mapped_[i]);
      if (entries.empty()) {
        entries = std::move(taken);
      } else {
        entries.insert(entries.end(), taken.begin(), taken.end());
      }
    }
    // Sorted by node, then metric; repeats of a metric in a node (merged
    // siblings, or profiles merged by name) are then neighbours.
    std::sort(entries.begin(), entries.end(),
              [](const ExclusiveEntry& a, const ExclusiveEntry& b) {
                return a.node != b.node ? a.node < b.node : a.metric < b.metric;
              });
    size_t out = 0;
    for (size_t k = 0; k < entries.size(); ++k) {
      if (out > 0 && entries[out - 1].node == entries[k].node &&
          entries[out - 1].metric == entries[k].metric) {
        MergeSample(entries[k], entries[out - 1]);
      } else {
        entries[out++] = entries[k];
      }
    }
    entries.resize(out);
    const size_t num_nodes = tree_.nodes_.size();
    std::vector<uint32_t>& begin = tree_.entry_begin_;
    begin.assign(num_nodes + 1, 0);
    for (const ExclusiveEntry& entry : entries) ++begin[entry.node + 1];
    for (size_t i = 0; i < num_nodes; ++i) begin[i + 1] += begin[i];
  }

  static void MergeSample(const ExclusiveEntry& value, ExclusiveEntry& into) {
    into.min = std::min(into.min, value.min);
    into.max = std::max(into.max, value.max);
    into.sum += value.sum;
    into.count += value.count;
  }

  void FinishChildren() {
    for (size_t i = 0; i < tree_.nodes_.size(); ++i) {
      const auto [first, count] = child_ranges_[i];
      tree_.nodes_[i].children = {first, first + count};
    }
    std::vector<std::pair<uint32_t, uint32_t>>().swap(child_ranges_);
  }

  const std::vector<ProfileInput>& inputs_;
  std::vector<format::Profile>* owned_;
  ProfileTree tree_;
  std::vector<std::vector<MetricIndex>> metric_maps_;
  std::vector<std::vector<NodeIndex>> mapped_;  // per input: source -> tree
  std::unordered_map<std::string_view, uint32_t> string_ids_;
  std::deque<std::string> owned_strings_;  // stable addresses
  FrameIndex frame_index_;
  // Per tree node: its children's first index and count.
  std::vector<std::pair<uint32_t, uint32_t>> child_ranges_;
  std::vector<uint32_t> leader_scratch_;
};

ProfileTree ProfileTree::FromProfile(const format::Profile& profile,
                                     const std::string& source) {
  return FromProfiles({ProfileInput{&profile, source}});
}

ProfileTree ProfileTree::FromProfiles(const std::vector<ProfileInput>& inputs) {
  return Builder(inputs, nullptr).Build();
}

ProfileTree ProfileTree::FromOwnedProfiles(
    std::vector<format::Profile> profiles,
    const std::vector<std::string>& sources) {
  std::vector<ProfileInput> inputs;
  for (size_t i = 0; i < profiles.size(); ++i) {
    inputs.push_back({&profiles[i], i < sources.size() ? sources[i] : ""});
  }
  return Builder(inputs, &profiles).Build();
}

std::optional<MetricIndex> ProfileTree::FindMetric(
    std::string_view name) const {
  for (MetricIndex i = 0; i < metrics_.size(); ++i) {
    if (metrics_[i].name == name) return i;
  }
  return std::nullopt;
}

bool ProfileTree::HasSamples(MetricIndex metric) const {
  for (const ExclusiveEntry& entry : entries_) {
    if (entry.metric == metric && (entry.count > 0 || entry.sum != 0)) {
      return true;
    }
  }
  return false;
}

const ProfileTree::ExclusiveEntry* ProfileTree::FindEntry(
    NodeIndex node, MetricIndex metric) const {
  for (uint32_t k = entry_begin_[node]; k < entry_begin_[node + 1]; ++k) {
    if (entries_[k].metric == metric) return &entries_[k];
  }
  return nullptr;
}

MetricStats ProfileTree::stats(NodeIndex node, MetricIndex metric) const {
  MetricStats stats;
  if (const ExclusiveEntry* entry = FindEntry(node, metric)) {
    stats.sum = entry->sum;
    stats.count = entry->count;
    stats.min = entry->min;
    stats.max = entry->max;
  }
  stats.inclusive = Inclusive(node, metric);
  return stats;
}

double ProfileTree::Exclusive(NodeIndex node, MetricIndex metric) const {
  const ExclusiveEntry* entry = FindEntry(node, metric);
  return entry != nullptr ? entry->sum : 0;
}

double ProfileTree::Inclusive(NodeIndex node, MetricIndex metric) const {
  const LazyColumn& column = InclusiveColumn(metric);
  if (!column.dense.empty()) return column.dense[node];
  auto it = std::lower_bound(
      column.sparse.begin(), column.sparse.end(), node,
      [](const std::pair<NodeIndex, double>& entry, NodeIndex n) {
        return entry.first < n;
      });
  return it != column.sparse.end() && it->first == node ? it->second : 0;
}

const ProfileTree::LazyColumn& ProfileTree::InclusiveColumn(
    MetricIndex metric) const {
  LazyColumn& column = *inclusive_[metric];
  std::call_once(column.once, [&] {
    // A metric on at least 1/64 of the nodes gets a value per node: one
    // reverse sweep folds every subtree into its root, as children always
    // have larger indices than their parents.
    if (valued_nodes_[metric] * 64 >= nodes_.size()) {
      std::vector<double>& values = column.dense;
      values.assign(nodes_.size(), 0);
      for (const ExclusiveEntry& entry : entries_) {
        if (entry.metric == metric) values[entry.node] = entry.sum;
      }
      for (size_t i = nodes_.size(); i-- > 1;) {
        values[nodes_[i].parent] += values[i];
      }
      return;
    }
    // Otherwise each valued node's sum is added along its ancestors.
    std::unordered_map<NodeIndex, double> sums;
    for (const ExclusiveEntry& entry : entries_) {
      if (entry.metric != metric) continue;
      for (NodeIndex n = entry.node;; n = nodes_[n].parent) {
        sums[n] += entry.sum;
        if (n == kRootNode) break;
      }
    }
    column.sparse.assign(sums.begin(), sums.end());
    std::sort(column.sparse.begin(), column.sparse.end());
    // An empty sparse column reads as zero everywhere; a metric without
    // values still needs the root's entry so Total() is well defined.
    if (column.sparse.empty()) column.sparse.emplace_back(kRootNode, 0);
  });
  return column;
}

}  // namespace deepcontext::analysis
