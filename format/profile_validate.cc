#include "format/profile_validate.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace deepcontext::format {
namespace {

Status CheckStringId(size_t node, const char* field, StringId id,
                     size_t num_strings) {
  if (id < num_strings) return Status::Ok();
  return Status::Error("node " + std::to_string(node) + ": " + field +
                       " string id " + std::to_string(id) + " out of range (" +
                       std::to_string(num_strings) + " strings)");
}

Status ValidateNodes(const Profile& profile) {
  const auto& nodes = profile.nodes;
  if (nodes.empty()) return Status::Error("no root node");
  if (nodes.size() > uint64_t{UINT32_MAX} + 1)
    return Status::Error("too many nodes");
  const size_t num_strings = profile.strings.size();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    const auto kind = static_cast<uint8_t>(node.kind);
    if (kind > kMaxFrameKind) {
      return Status::Error("node " + std::to_string(i) + ": unknown kind " +
                           std::to_string(kind) + " (max " +
                           std::to_string(kMaxFrameKind) + ")");
    }
    if (i == 0) {
      if (node.kind != FrameKind::kRoot)
        return Status::Error("node 0 is not the root");
      if (node.parent != 0)
        return Status::Error("root node's parent is not itself");
    } else {
      if (node.kind == FrameKind::kRoot) {
        return Status::Error("node " + std::to_string(i) +
                             ": second root node");
      }
      if (node.parent >= i) {
        return Status::Error("node " + std::to_string(i) + ": parent " +
                             std::to_string(node.parent) +
                             " is not below the node's index");
      }
    }
    Status id = CheckStringId(i, "name", node.name, num_strings);
    if (id.ok()) id = CheckStringId(i, "file", node.file, num_strings);
    if (!id.ok()) return id;
  }
  return Status::Ok();
}

Status ValidateMetrics(const Profile& profile) {
  std::unordered_set<std::string_view> names;
  for (size_t i = 0; i < profile.metrics.size(); ++i) {
    const std::string& name = profile.metrics[i].name;
    if (name.empty())
      return Status::Error("metric " + std::to_string(i) + ": empty name");
    if (!names.insert(name).second) {
      return Status::Error("metric " + std::to_string(i) +
                           ": duplicate name '" + name + "'");
    }
  }
  return Status::Ok();
}

Status ValidateValues(const Profile& profile) {
  const size_t num_nodes = profile.nodes.size();
  const size_t num_metrics = profile.metrics.size();
  for (size_t i = 0; i < profile.values.size(); ++i) {
    const MetricValue& value = profile.values[i];
    if (value.node >= num_nodes) {
      return Status::Error("value " + std::to_string(i) + ": node id " +
                           std::to_string(value.node) + " out of range (" +
                           std::to_string(num_nodes) + " nodes)");
    }
    if (value.metric >= num_metrics) {
      return Status::Error("value " + std::to_string(i) + ": metric id " +
                           std::to_string(value.metric) + " out of range (" +
                           std::to_string(num_metrics) + " metrics)");
    }
  }
  // Sorting packed keys finds duplicates in O(n log n) with one allocation,
  // cheaper than a hash set for the millions of values a long run can have.
  std::vector<uint64_t> keys;
  keys.reserve(profile.values.size());
  for (const MetricValue& value : profile.values) {
    keys.push_back(uint64_t{value.node} << 32 | value.metric);
  }
  std::sort(keys.begin(), keys.end());
  auto dup = std::adjacent_find(keys.begin(), keys.end());
  if (dup != keys.end()) {
    return Status::Error("duplicate value for node " +
                         std::to_string(*dup >> 32) + ", metric " +
                         std::to_string(*dup & UINT32_MAX));
  }
  return Status::Ok();
}

}  // namespace

Status ValidateProfile(const Profile& profile) {
  if (profile.strings.empty() || !profile.strings[0].empty()) {
    return Status::Error("string 0 is not the empty string");
  }
  if (profile.strings.size() > uint64_t{UINT32_MAX} + 1) {
    return Status::Error("too many strings");
  }
  Status status = ValidateNodes(profile);
  if (status.ok()) status = ValidateMetrics(profile);
  if (status.ok()) status = ValidateValues(profile);
  return status;
}

}  // namespace deepcontext::format
