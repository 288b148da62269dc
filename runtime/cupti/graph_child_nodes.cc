#include "runtime/cupti/graph_child_nodes.h"

#include <algorithm>
#include <optional>

namespace deepcontext::cupti {

void AnnouncedClones::Add(uint64_t node_id) {
  const auto graph = static_cast<uint32_t>(node_id >> 32);
  const auto index = static_cast<uint32_t>(node_id);
  // Least recently cloned into goes first: an instantiation clones into
  // the executable graph between the copies of each child graph, each a
  // new graph id.
  Entry* entry = nullptr;
  for (size_t i = size_; i > 0; --i) {
    if (entries_[i - 1].graph == graph) {
      std::rotate(entries_.begin() + (i - 1), entries_.begin() + i, entries_.begin() + size_);
      entry = &entries_[size_ - 1];
      break;
    }
  }
  if (entry == nullptr) {
    if (size_ == kMaxGraphs) {
      std::move(entries_.begin() + 1, entries_.end(), entries_.begin());
      --size_;
    }
    entry = &entries_[size_++];
    *entry = Entry{graph, {}};
  }
  ++entry->range.count;
  entry->range.highest = std::max(entry->range.highest, index);
}

AnnouncedClones::Range AnnouncedClones::Take(uint32_t graph_id) {
  Range range;
  for (size_t i = 0; i < size_; ++i) {
    if (entries_[i].graph == graph_id) range = entries_[i].range;
  }
  size_ = 0;
  return range;
}

std::vector<ChildNodeLink> LinkChildGraphNodes(const CudaGraphFunctions& functions,
                                               const GraphNodeIdOf& node_id_of,
                                               CUgraph graph, uint32_t exec_id,
                                               AnnouncedClones::Range announced) {
  if (!functions.complete() || !node_id_of || exec_id == 0) return {};
  const std::optional<std::vector<CUgraphNode>> top = GraphNodes(functions, graph);
  if (!top.has_value() || top->empty()) return {};
  // The driver numbered the top level as measured, or nothing is trusted.
  if (announced.count != top->size() || announced.highest + 1 != top->size()) return {};
  const uint64_t base = static_cast<uint64_t>(exec_id) << 32;
  uint64_t index = top->size();  // inner nodes are numbered after the top level
  std::vector<ChildNodeLink> links;
  for (CUgraphNode node : *top) {
    const std::optional<int> type = GraphNodeType(functions, node);
    if (!type.has_value()) return {};
    if (*type != CU_GRAPH_NODE_TYPE_GRAPH) continue;
    uint64_t child_node_id = 0;
    CUgraph child = nullptr;
    if (!node_id_of(node, &child_node_id) ||
        functions.child_graph_node_get_graph(node, &child) != CUDA_SUCCESS) {
      return {};
    }
    const std::optional<std::vector<CUgraphNode>> inner = GraphNodes(functions, child);
    if (!inner.has_value()) return {};
    for (CUgraphNode inner_node : *inner) {
      const std::optional<int> inner_type = GraphNodeType(functions, inner_node);
      // Deeper nesting: its numbering was never measured.
      if (!inner_type.has_value() || *inner_type == CU_GRAPH_NODE_TYPE_GRAPH) return {};
      uint64_t source_id = 0;
      if (!node_id_of(inner_node, &source_id)) return {};
      if (index > 0xffffffffull) return {};
      links.push_back({base | index, source_id, child_node_id});
      ++index;
    }
  }
  return links;
}

}  // namespace deepcontext::cupti
