#include "tools/merge/rank_merger.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tools/merge/rank_columns.h"

namespace deepcontext::merge {

namespace {

// Identity of a merged node: its parent and its own frame fields, with
// string ids of the merged string table.
struct NodeKey {
  format::NodeId parent;
  format::StringId name;
  format::StringId file;
  uint32_t line;
  format::FrameKind kind;

  bool operator==(const NodeKey&) const = default;
};

struct NodeKeyHash {
  size_t operator()(const NodeKey& key) const {
    uint64_t h = key.parent;
    h = h * 0x9E3779B97F4A7C15ULL ^ key.name;
    h = h * 0x9E3779B97F4A7C15ULL ^ key.file;
    h = h * 0x9E3779B97F4A7C15ULL ^ key.line;
    h = h * 0x9E3779B97F4A7C15ULL ^ static_cast<uint64_t>(key.kind);
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// One (merged node, base metric) pair: the combined aggregate and the sum
// each rank contributed, in the order ranks were added.
struct ValueSlot {
  format::MetricValue combined;
  std::vector<std::pair<uint32_t, double>> per_rank;  // (rank index, sum)
};

// Metadata keys that describe one process; a merged profile names the
// processes through rank<R>_* keys instead.
bool IsPerProcessKey(const std::string& key) {
  return key == "pid" || key == "ppid" || key == "rank" ||
         key == "local_rank" || key == "host" || key == "start_time_ns" ||
         key == "end_time_ns" || key == "duration_ns";
}

std::optional<long long> ParseRank(const std::string& text) {
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || ptr != end || value < 0) return std::nullopt;
  return value;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

format::MetricValue OneSample(format::NodeId node, format::MetricId metric,
                              double value) {
  return format::MetricValue{node, metric, 1, value, value, value};
}

}  // namespace

std::string MergedThreadName(const std::string& name) {
  constexpr std::string_view kPrefix = "thread ";
  if (!name.starts_with(kPrefix)) return name;
  size_t digits_end = kPrefix.size();
  while (digits_end < name.size() && name[digits_end] >= '0' &&
         name[digits_end] <= '9') {
    ++digits_end;
  }
  if (digits_end == kPrefix.size()) return name;
  if (digits_end != name.size() && name[digits_end] != ' ') return name;
  return "thread *" + name.substr(digits_end);
}

class RankMerger::State {
 public:
  Status Add(const format::Profile& profile, const std::string& source) {
    if (!profile.Metadata(std::string(kMergedRanksKey)).empty()) {
      return Status::Error(source +
                           ": already a merged profile (merge the per-rank "
                           "files it came from instead)");
    }
    long long rank = static_cast<long long>(ranks_.size());
    const std::string rank_text = profile.Metadata("rank");
    if (!rank_text.empty()) {
      std::optional<long long> parsed = ParseRank(rank_text);
      if (!parsed) {
        return Status::Error(source + ": rank '" + rank_text +
                             "' is not a non-negative integer");
      }
      rank = *parsed;
    }
    // Numbering by position is only safe when no input names its rank: a
    // rank-less profile (typically the launcher's own) would otherwise be
    // added to whichever rank has its position.
    const bool ranked = !rank_text.empty();
    if (processes_ > 0 && ranked != ranked_inputs_) {
      return Status::Error(
          source + (ranked ? ": has a rank, but " + first_source_ +
                                 " has none (leave out profiles without a "
                                 "rank, such as the launcher's own)"
                           : ": has no rank, but " + first_source_ +
                                 " has one (leave out profiles without a "
                                 "rank, such as the launcher's own)"));
    }
    ranked_inputs_ = ranked;
    if (processes_ == 0) first_source_ = source;
    // Several processes of one rank (its DataLoader workers, helpers) add
    // up to that rank's values.
    uint32_t rank_index = static_cast<uint32_t>(ranks_.size());
    for (uint32_t i = 0; i < ranks_.size(); ++i) {
      if (ranks_[i].rank == rank) rank_index = i;
    }
    const bool first_of_rank = rank_index == ranks_.size();
    if (first_of_rank) ranks_.push_back({rank, {}});
    ranks_[rank_index].processes.push_back({source, profile.metadata});
    if (processes_ == 0) first_metadata_ = profile.metadata;
    ++processes_;

    std::vector<format::StringId> strings(profile.strings.size());
    for (size_t i = 0; i < profile.strings.size(); ++i) {
      strings[i] = Intern(profile.strings[i]);
    }
    // Validated profiles list parents before children, so one forward pass
    // maps every node.
    std::vector<format::NodeId> node_map(profile.nodes.size(), 0);
    for (size_t i = 1; i < profile.nodes.size(); ++i) {
      const format::Node& node = profile.nodes[i];
      NodeKey key{node_map[node.parent], strings[node.name], strings[node.file],
                  node.line, node.kind};
      if (node.kind == format::FrameKind::kThread) {
        key.name = Intern(MergedThreadName(profile.strings[node.name]));
      }
      node_map[i] = Child(key);
    }
    std::vector<format::MetricId> metric_map(profile.metrics.size());
    for (size_t i = 0; i < profile.metrics.size(); ++i) {
      metric_map[i] = BaseMetric(profile.metrics[i]);
    }
    for (const format::MetricValue& value : profile.values) {
      AddValue(node_map[value.node], metric_map[value.metric], rank_index,
               first_of_rank, value);
    }
    return Status::Ok();
  }

  size_t rank_count() const { return ranks_.size(); }
  size_t process_count() const { return processes_; }

  format::Profile Finish() {
    format::Profile out;
    out.strings = std::move(strings_);
    out.nodes = std::move(nodes_);
    out.metadata = MergedMetadata();
    const auto base_count = static_cast<format::MetricId>(metrics_.size());
    for (const format::MetricDescriptor& base : metrics_) {
      out.metrics.push_back(base);
    }
    for (const format::MetricDescriptor& base : metrics_) {
      out.metrics.push_back({base.name + std::string(kRanksSuffix), base.unit,
                             "per-rank " + base.name +
                                 ": count = ranks with the context, min/max "
                                 "= smallest/largest rank"});
      out.metrics.push_back({base.name + std::string(kMedianSuffix), base.unit,
                             "median over ranks of " + base.name});
      out.metrics.push_back({base.name + std::string(kSlowestSuffix), "rank",
                             "rank with the largest " + base.name});
    }
    out.values.reserve(slots_.size() * 4);
    std::vector<double> sums(ranks_.size());
    for (auto& [key, slot_index] : slot_index_) {
      ValueSlot& slot = slots_[slot_index];
      const auto node = static_cast<format::NodeId>(key >> 32);
      const auto metric = static_cast<format::MetricId>(key & 0xffffffffu);
      slot.combined.node = node;
      slot.combined.metric = metric;
      out.values.push_back(slot.combined);

      std::fill(sums.begin(), sums.end(), 0.0);
      for (const auto& [rank_index, sum] : slot.per_rank) sums[rank_index] += sum;
      size_t slowest = 0;
      for (size_t r = 1; r < sums.size(); ++r) {
        if (sums[r] > sums[slowest] ||
            (sums[r] == sums[slowest] && ranks_[r].rank < ranks_[slowest].rank)) {
          slowest = r;
        }
      }
      const format::MetricId ranks_metric = base_count + 3 * metric;
      out.values.push_back(format::MetricValue{
          node, ranks_metric, slot.per_rank.size(), slot.combined.sum,
          *std::min_element(sums.begin(), sums.end()), sums[slowest]});
      out.values.push_back(OneSample(node, ranks_metric + 1, Median(sums)));
      out.values.push_back(OneSample(
          node, ranks_metric + 2, static_cast<double>(ranks_[slowest].rank)));
      slot.per_rank.clear();
      slot.per_rank.shrink_to_fit();
    }
    // Deterministic output: the same inputs give the same bytes.
    std::sort(out.values.begin(), out.values.end(),
              [](const format::MetricValue& a, const format::MetricValue& b) {
                return a.node != b.node ? a.node < b.node : a.metric < b.metric;
              });
    return out;
  }

 private:
  struct ProcessInfo {
    std::string source;
    std::vector<std::pair<std::string, std::string>> metadata;
  };
  struct RankInfo {
    long long rank;
    std::vector<ProcessInfo> processes;
  };

  format::StringId Intern(const std::string& text) {
    auto [it, inserted] = string_ids_.try_emplace(
        text, static_cast<format::StringId>(strings_.size()));
    if (inserted) strings_.push_back(text);
    return it->second;
  }

  format::NodeId Child(const NodeKey& key) {
    auto [it, inserted] = node_ids_.try_emplace(
        key, static_cast<format::NodeId>(nodes_.size()));
    if (inserted) {
      nodes_.push_back(format::Node{key.parent, key.kind, key.name, key.file,
                                    key.line});
    }
    return it->second;
  }

  format::MetricId BaseMetric(const format::MetricDescriptor& metric) {
    for (size_t i = 0; i < metrics_.size(); ++i) {
      if (metrics_[i].name == metric.name) {
        return static_cast<format::MetricId>(i);
      }
    }
    metrics_.push_back(metric);
    return static_cast<format::MetricId>(metrics_.size() - 1);
  }

  void AddValue(format::NodeId node, format::MetricId metric,
                uint32_t rank_index, bool first_of_rank,
                const format::MetricValue& value) {
    const uint64_t key = (static_cast<uint64_t>(node) << 32) | metric;
    auto [it, inserted] = slot_index_.try_emplace(key, slots_.size());
    if (inserted) {
      slots_.push_back(ValueSlot{value, {}});
    } else {
      format::MetricValue& combined = slots_[it->second].combined;
      combined.count += value.count;
      combined.sum += value.sum;
      combined.min = std::min(combined.min, value.min);
      combined.max = std::max(combined.max, value.max);
    }
    auto& per_rank = slots_[it->second].per_rank;
    // Threads folded together by MergedThreadName, and processes of one
    // rank, add to the rank's sum. While a rank's first profile is added
    // its entry can only be the last one; later profiles of a rank search.
    if (!per_rank.empty() && per_rank.back().first == rank_index) {
      per_rank.back().second += value.sum;
      return;
    }
    if (!first_of_rank) {
      for (auto& entry : per_rank) {
        if (entry.first == rank_index) {
          entry.second += value.sum;
          return;
        }
      }
    }
    per_rank.emplace_back(rank_index, value.sum);
  }

  std::vector<std::pair<std::string, std::string>> MergedMetadata() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& entry : first_metadata_) {
      if (!IsPerProcessKey(entry.first)) out.push_back(entry);
    }
    std::vector<const RankInfo*> sorted;
    for (const RankInfo& info : ranks_) sorted.push_back(&info);
    std::sort(sorted.begin(), sorted.end(),
              [](const RankInfo* a, const RankInfo* b) { return a->rank < b->rank; });
    std::string list;
    long long start = std::numeric_limits<long long>::max();
    long long end = 0;
    for (const RankInfo* info : sorted) {
      if (!list.empty()) list += ",";
      list += std::to_string(info->rank);
    }
    out.emplace_back(std::string(kMergedRanksKey), std::to_string(ranks_.size()));
    out.emplace_back(std::string(kMergedRankListKey), list);
    for (const RankInfo* info : sorted) {
      const std::string prefix = "rank" + std::to_string(info->rank) + "_";
      std::string sources, hosts, pids;
      for (const ProcessInfo& process : info->processes) {
        sources += (sources.empty() ? "" : ",") + process.source;
        for (const auto& [key, value] : process.metadata) {
          if (key == "host" && hosts.find(value) == std::string::npos) {
            hosts += (hosts.empty() ? "" : ",") + value;
          }
          if (key == "pid") pids += (pids.empty() ? "" : ",") + value;
          if (key == "start_time_ns") {
            if (auto parsed = ParseRank(value)) start = std::min(start, *parsed);
          }
          if (key == "end_time_ns") {
            if (auto parsed = ParseRank(value)) end = std::max(end, *parsed);
          }
        }
      }
      out.emplace_back(RankSourceKey(info->rank), sources);
      if (!hosts.empty()) out.emplace_back(prefix + "host", hosts);
      if (!pids.empty()) out.emplace_back(prefix + "pid", pids);
    }
    if (end != 0 && start <= end) {
      out.emplace_back("start_time_ns", std::to_string(start));
      out.emplace_back("end_time_ns", std::to_string(end));
      out.emplace_back("duration_ns", std::to_string(end - start));
    }
    return out;
  }

  std::vector<RankInfo> ranks_;
  size_t processes_ = 0;
  bool ranked_inputs_ = false;  // whether the inputs carry `rank` metadata
  std::string first_source_;
  std::vector<std::pair<std::string, std::string>> first_metadata_;
  std::vector<std::string> strings_{""};
  std::unordered_map<std::string, format::StringId> string_ids_{{"", 0}};
  std::vector<format::Node> nodes_{format::Node{}};
  std::unordered_map<NodeKey, format::NodeId, NodeKeyHash> node_ids_;
  std::vector<format::MetricDescriptor> metrics_;
  std::vector<ValueSlot> slots_;
  std::unordered_map<uint64_t, size_t> slot_index_;
};

RankMerger::RankMerger() : state_(std::make_unique<State>()) {}
RankMerger::~RankMerger() = default;

Status RankMerger::Add(const format::Profile& profile,
                       const std::string& source) {
  return state_->Add(profile, source);
}

size_t RankMerger::rank_count() const { return state_->rank_count(); }

size_t RankMerger::process_count() const { return state_->process_count(); }

format::Profile RankMerger::Finish() { return state_->Finish(); }

}  // namespace deepcontext::merge
