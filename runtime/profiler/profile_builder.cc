#include "runtime/profiler/profile_builder.h"

#include <unordered_map>

#include "deepcontext/dlmonitor.h"

namespace deepcontext::profiler {
namespace {

class StringInterner {
 public:
  explicit StringInterner(format::Profile& profile) : profile_(profile) {}
  format::StringId Intern(const char* text) {
    if (text == nullptr || *text == '\0') return 0;
    auto [it, inserted] =
        ids_.emplace(text, static_cast<format::StringId>(profile_.strings.size()));
    if (inserted) profile_.strings.emplace_back(text);
    return it->second;
  }

 private:
  format::Profile& profile_;
  std::unordered_map<std::string, format::StringId> ids_;
};

}  // namespace

format::Profile BuildProfile(
    const MetricStore& store,
    const std::vector<std::pair<std::string, std::string>>& metadata) {
  format::Profile profile;
  profile.metadata = metadata;
  for (const MetricInfo& info : store.Metrics()) {
    profile.metrics.push_back({info.name, info.unit, info.description});
  }

  // Snapshot the samples first; contexts created after this point are not
  // referenced and can be ignored.
  const ContextId end = dlmonitor_context_count() + 1;
  struct Sample {
    ContextId context;
    MetricId metric;
    Accumulator value;
  };
  std::vector<Sample> samples;
  store.ForEach(end, [&](ContextId context, MetricId metric,
                         const Accumulator& value) {
    samples.push_back({context, metric, value});
  });

  // Mark measured contexts and their ancestors.
  std::vector<ContextId> parent_of(end, 0);
  std::vector<bool> needed(end, false);
  for (const Sample& sample : samples) {
    for (ContextId id = sample.context; id != 0 && id < end && !needed[id];) {
      needed[id] = true;
      dlmonitor_context_t parent = 0;
      if (dlmonitor_context_frame(id, nullptr, &parent) != DLMONITOR_OK) break;
      parent_of[id] = parent;
      id = parent;
    }
  }

  // Context ids are assigned parent-before-child, so one pass in id order
  // emits every parent before its children, as the format requires.
  StringInterner strings(profile);
  std::unordered_map<ContextId, format::NodeId> node_of;
  node_of[1] = 0;  // DLMonitor's root is the profile's root
  for (ContextId id = 2; id < end; ++id) {
    if (!needed[id]) continue;
    dlmonitor_frame_t frame{};
    frame.struct_size = sizeof(frame);
    if (dlmonitor_context_frame(id, &frame, nullptr) != DLMONITOR_OK) continue;
    auto parent = node_of.find(parent_of[id]);
    if (parent == node_of.end()) continue;
    format::Node node;
    node.parent = parent->second;
    node.kind = static_cast<format::FrameKind>(frame.kind);
    node.name = strings.Intern(frame.name);
    node.file = strings.Intern(frame.file);
    node.line = frame.line;
    node_of[id] = static_cast<format::NodeId>(profile.nodes.size());
    profile.nodes.push_back(node);
  }

  for (const Sample& sample : samples) {
    auto node = node_of.find(sample.context);
    if (node == node_of.end()) continue;
    profile.values.push_back({node->second, sample.metric, sample.value.count,
                              sample.value.sum, sample.value.min,
                              sample.value.max});
  }
  return profile;
}

}  // namespace deepcontext::profiler
