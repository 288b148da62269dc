// The calling context tree the offline tools work on: one or several
// profiles resolved into a single tree with per-node exclusive and
// inclusive values for every metric. This is also the top-down view.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/profile_data.h"
#include "tools/analysis/frame.h"

namespace deepcontext::analysis {

// Index into ProfileTree nodes; node 0 is the root. A parent always has a
// smaller index than its children.
using NodeIndex = uint32_t;

// Index into ProfileTree::metrics().
using MetricIndex = size_t;

// A metric as shown to the user; metrics from several profiles are merged
// by name.
struct MetricInfo {
  std::string name;         // "cpu_time"
  std::string unit;         // "ns", "bytes", "count", or anything else
  std::string description;  // one line for humans, may be empty
};

// The values of one metric at one node.
struct MetricStats {
  // Online aggregate of the samples taken in the node itself.
  double sum = 0;
  uint64_t count = 0;
  double min = 0;
  double max = 0;
  // sum over the node's whole subtree.
  double inclusive = 0;
};

// One node of the tree.
struct TreeNode {
  FrameId frame = 0;
  NodeIndex parent = 0;  // the root is its own parent
  uint32_t depth = 0;    // 0 for the root
  // In first-seen order. A node's children are consecutive indices, so
  // this is a range of numbers rather than a list held per node.
  std::ranges::iota_view<NodeIndex, NodeIndex> children;
};

// One profile to put into a tree, with the name of the file it came from.
struct ProfileInput {
  const format::Profile* profile = nullptr;
  std::string source;  // file path; may be empty for in-memory profiles
};

// Where the tree came from: one entry per input profile, for report headers.
struct SourceInfo {
  std::string path;
  std::vector<std::pair<std::string, std::string>> metadata;

  // Returns the metadata value for key, or "" when absent.
  std::string Metadata(std::string_view key) const;
};

// An immutable calling context tree built from profiles. Identical sibling
// frames are merged, so a profile whose writer emitted a frame twice under
// one parent still shows it once. Malformed references (nodes whose parent
// chain never reaches the root, out-of-range string or metric ids) are
// skipped rather than trusted: the tree never indexes out of bounds.
class ProfileTree {
 public:
  // Builds the tree of a single profile; its root is the profile's root.
  static ProfileTree FromProfile(const format::Profile& profile,
                                 const std::string& source = "");

  // Like FromProfiles, but takes the profiles over: their values become
  // the tree's own and their nodes are released once resolved, so building
  // needs little memory beyond the tree. sources[i] names profiles[i].
  static ProfileTree FromOwnedProfiles(std::vector<format::Profile> profiles,
                                       const std::vector<std::string>& sources);

  // Builds one tree from several profiles. With more than one input each
  // profile goes under its own kProcess node labelled
  // "process <pid> rank <rank> (<file name>)", so processes and ranks stay
  // side by side while the root's totals cover all of them. A single input
  // behaves like FromProfile.
  static ProfileTree FromProfiles(const std::vector<ProfileInput>& inputs);

  // The root node's index.
  static constexpr NodeIndex kRootNode = 0;

  // Number of nodes, the root included.
  size_t size() const { return nodes_.size(); }

  // Returns the node at index; index must be < size().
  const TreeNode& node(NodeIndex index) const { return nodes_[index]; }

  // Returns the frame of a node.
  const Frame& frame_of(NodeIndex index) const {
    return frames_[nodes_[index].frame];
  }

  // Distinct frames, indexed by FrameId. frames()[0] is the root's frame.
  const std::vector<Frame>& frames() const { return frames_; }

  // Metrics present in any input, in first-seen order.
  const std::vector<MetricInfo>& metrics() const { return metrics_; }

  // Returns the index of the metric called name, if present.
  std::optional<MetricIndex> FindMetric(std::string_view name) const;

  // Returns the values of metric at node (all zero when it has none).
  MetricStats stats(NodeIndex node, MetricIndex metric) const;

  // Exclusive sum of metric at node.
  double Exclusive(NodeIndex node, MetricIndex metric) const;

  // Every sample aggregate recorded in node itself, sorted by metric (no
  // inclusive sums computed): for writers that visit all values once.
  std::span<const format::MetricValue> samples(NodeIndex node) const {
    return {entries_.data() + entry_begin_[node],
            entries_.data() + entry_begin_[node + 1]};
  }

  // Inclusive sum (whole subtree) of metric at node. The first call for a
  // metric sums its subtrees in one pass over the tree; later calls, from
  // any thread, read the result.
  double Inclusive(NodeIndex node, MetricIndex metric) const;

  // Sum of metric over the whole tree.
  double Total(MetricIndex metric) const {
    return metrics_.empty() ? 0 : Inclusive(kRootNode, metric);
  }

  // True when any node recorded at least one sample of metric.
  bool HasSamples(MetricIndex metric) const;

  // The input profiles, in the order given.
  const std::vector<SourceInfo>& sources() const { return sources_; }

  ProfileTree(ProfileTree&&) = default;
  ProfileTree& operator=(ProfileTree&&) = default;
  ~ProfileTree();

 private:
  class Builder;

  // Inclusive sums of one metric, filled on first use: one per node for a
  // metric with values on many nodes; for one with values on few nodes,
  // only their ancestors', sorted by node, so that a file declaring
  // thousands of metrics with a value or two each costs what its values
  // cost even when every metric is asked for (as export does).
  struct LazyColumn {
    std::once_flag once;
    std::vector<double> dense;
    std::vector<std::pair<NodeIndex, double>> sparse;
  };

  // The samples of one metric recorded in one node: a file's value with its
  // node and metric renumbered to the tree's.
  using ExclusiveEntry = format::MetricValue;

  // Trees only come from the factories, so every tree has a root.
  ProfileTree();

  // The entry of metric at node, or nullptr.
  const ExclusiveEntry* FindEntry(NodeIndex node, MetricIndex metric) const;
  // Inclusive sums of metric, computed on first use.
  const LazyColumn& InclusiveColumn(MetricIndex metric) const;

  std::vector<TreeNode> nodes_;
  std::vector<Frame> frames_;
  std::vector<MetricInfo> metrics_;
  // Exclusive values are sparse (most nodes have none for most metrics):
  // the entries of node i are entries_[entry_begin_[i], entry_begin_[i+1]),
  // sorted by metric. Memory follows the values in the files, not nodes
  // times metrics.
  std::vector<uint32_t> entry_begin_;
  std::vector<ExclusiveEntry> entries_;
  // One per metric; a column is filled only when asked for.
  std::vector<std::unique_ptr<LazyColumn>> inclusive_;
  // Per metric: how many nodes have a value (which column form it gets).
  std::vector<size_t> valued_nodes_;
  std::vector<SourceInfo> sources_;
};

// Returns the label of the synthetic node a multi-profile tree puts a
// profile under, e.g. "process 1234 rank 0 (train.dctx)". Parts whose
// metadata is missing are left out; index (0-based position among the
// inputs) numbers the process when neither pid nor file name is known.
std::string ProcessLabel(const SourceInfo& source, size_t index);

}  // namespace deepcontext::analysis
