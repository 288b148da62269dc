#include "runtime/profiler/profile_builder.h"

#include <map>
#include <new>
#include <unordered_map>
#include <utility>

#include "deepcontext/dlmonitor.h"
#include "format/profile_stream.h"

namespace deepcontext::profiler {
namespace {

constexpr format::NodeId kNotWritten = UINT32_MAX;

// Ids for the strings of the frames written. DLMonitor's strings live as
// long as the process, so their addresses serve as keys and nothing is
// copied until the strings section is encoded.
class StringInterner {
 public:
  format::StringId Intern(const char* text) {
    if (text == nullptr || *text == '\0') return 0;
    auto [it, inserted] =
        ids_.emplace(text, static_cast<format::StringId>(texts_.size() + 1));
    if (inserted) texts_.push_back(text);
    return it->second;
  }

  format::SectionBody Section() const {
    format::SectionBody body;
    body.AddString("");
    for (const char* text : texts_) body.AddString(text);
    return body;
  }

 private:
  std::unordered_map<const char*, format::StringId> ids_;
  std::vector<const char*> texts_;
};

// A written node's parent and frame: the contexts that name the same frame
// under the same node are written as one.
struct NodeKeyHash {
  size_t operator()(const format::Node& node) const {
    uint64_t hash = node.parent;
    for (uint64_t part : {static_cast<uint64_t>(node.kind), static_cast<uint64_t>(node.name),
                          static_cast<uint64_t>(node.file), static_cast<uint64_t>(node.line)}) {
      hash = (hash ^ part) * 0x100000001b3ull;
    }
    return static_cast<size_t>(hash ^ (hash >> 29));
  }
};
struct NodeKeyEqual {
  bool operator()(const format::Node& a, const format::Node& b) const {
    return a.parent == b.parent && a.kind == b.kind && a.name == b.name && a.file == b.file &&
           a.line == b.line;
  }
};
using NodeKeys = std::unordered_map<format::Node, format::NodeId, NodeKeyHash, NodeKeyEqual>;

Status WriteOrThrow(
    const MetricStore& store,
    const std::vector<std::pair<std::string, std::string>>& metadata,
    const std::string& path) {
  format::ProfileStreamWriter writer;
  Status problem = writer.Begin(path);
  if (!problem.ok()) return problem;

  // Contexts created after this point are not referenced and are ignored.
  const ContextId end = dlmonitor_context_count() + 1;
  // Mark measured contexts and their ancestors.
  std::vector<ContextId> parent_of(end, 0);
  std::vector<bool> needed(end, false);
  store.ForEach(end, [&](ContextId context, MetricId, const Accumulator&) {
    for (ContextId id = context; id != 0 && id < end && !needed[id];) {
      needed[id] = true;
      dlmonitor_context_t parent = 0;
      if (dlmonitor_context_frame(id, nullptr, &parent) != DLMONITOR_OK) break;
      parent_of[id] = parent;
      id = parent;
    }
  });

  // Context ids are assigned parent-before-child, so one pass in id order
  // emits every parent before its children, as the format requires.
  StringInterner strings;
  std::vector<format::NodeId> node_of(end, kNotWritten);
  // Native frames are kept by return address while the program runs and
  // named here: call sites of one function without line information, or
  // of one line, get one name, and their contexts (and their subtrees,
  // whose parents are then one node) one node. Such nodes' values merge.
  // Only native frames and the nodes below them can meet an equal sibling,
  // so only they are kept in `written`: without native frames it stays
  // empty, and a write a few bytes per context.
  NodeKeys written;
  std::vector<bool> merged;
  std::vector<bool> native_subtree;
  {
    format::SectionBody nodes;
    nodes.AddNode(format::Node{});  // DLMonitor's root is the profile's root
    if (end > 1) node_of[1] = 0;
    format::NodeId next = 1;
    for (ContextId id = 2; id < end; ++id) {
      if (!needed[id]) continue;
      dlmonitor_frame_t frame{};
      frame.struct_size = sizeof(frame);
      if (dlmonitor_context_frame(id, &frame, nullptr) != DLMONITOR_OK) {
        continue;
      }
      const ContextId parent = parent_of[id];
      if (parent >= end || node_of[parent] == kNotWritten) continue;
      format::Node node;
      node.parent = node_of[parent];
      node.kind = static_cast<format::FrameKind>(frame.kind);
      node.name = strings.Intern(frame.name);
      node.file = strings.Intern(frame.file);
      node.line = frame.line;
      const bool native = frame.kind == DLMONITOR_FRAME_NATIVE ||
                          (node.parent < native_subtree.size() && native_subtree[node.parent]);
      if (native) {
        const auto [it, added] = written.try_emplace(node, next);
        if (!added) {
          node_of[id] = it->second;
          if (merged.size() <= it->second) merged.resize(it->second + 1, false);
          merged[it->second] = true;
          continue;
        }
        if (native_subtree.size() <= next) native_subtree.resize(next + 1, false);
        native_subtree[next] = true;
      }
      nodes.AddNode(node);
      node_of[id] = next++;
    }
    NodeKeys().swap(written);
    std::vector<bool>().swap(native_subtree);
    std::vector<ContextId>().swap(parent_of);
    std::vector<bool>().swap(needed);
    problem = writer.AddNodes(nodes);
    if (!problem.ok()) return problem;
  }
  problem = writer.AddStrings(strings.Section());
  if (!problem.ok()) return problem;

  // Metrics registered after this snapshot have no descriptor in the file,
  // so their samples are left out below.
  const std::vector<MetricInfo> metric_infos = store.Metrics();
  format::SectionBody metrics;
  for (const MetricInfo& info : metric_infos) {
    metrics.AddMetric({info.name, info.unit, info.description});
  }
  problem = writer.AddMetrics(metrics);
  if (!problem.ok()) return problem;

  format::SectionBody meta;
  for (const auto& [key, value] : metadata) meta.AddMetadata(key, value);
  problem = writer.AddMetadata(meta);
  if (!problem.ok()) return problem;

  // Samples are read again rather than kept from the first pass; a context
  // first measured in between has no node and is left out, as any context
  // created after the write began.
  format::SectionBody values;
  std::map<std::pair<format::NodeId, MetricId>, Accumulator> merged_values;
  store.ForEach(
      end, [&](ContextId context, MetricId metric, const Accumulator& value) {
        if (context >= end || node_of[context] == kNotWritten) return;
        if (metric >= metric_infos.size()) return;
        const format::NodeId node = node_of[context];
        if (node < merged.size() && merged[node]) {
          merged_values[{node, metric}].Merge(value);
          return;
        }
        values.AddValue({node, metric, value.count, value.sum, value.min, value.max});
      });
  for (const auto& [at, value] : merged_values) {
    values.AddValue({at.first, at.second, value.count, value.sum, value.min, value.max});
  }
  problem = writer.AddValues(values);
  if (!problem.ok()) return problem;
  return writer.Finish();
}

}  // namespace

Status WriteProfile(
    const MetricStore& store,
    const std::vector<std::pair<std::string, std::string>>& metadata,
    const std::string& path) {
  try {
    return WriteOrThrow(store, metadata, path);
  } catch (const std::bad_alloc&) {
    // The writer's destructor has removed its temporary file.
    return Status::Error(path + ": out of memory");
  }
}

}  // namespace deepcontext::profiler
