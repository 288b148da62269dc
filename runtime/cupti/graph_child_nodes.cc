#include "runtime/cupti/graph_child_nodes.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace deepcontext::cupti {
namespace {

std::optional<std::vector<CUgraphNode>> Nodes(const CudaGraphFunctions& f, CUgraph graph) {
  size_t count = 0;
  if (graph == nullptr || f.get_nodes(graph, nullptr, &count) != CUDA_SUCCESS) {
    return std::nullopt;
  }
  std::vector<CUgraphNode> nodes(count);
  if (count > 0 && f.get_nodes(graph, nodes.data(), &count) != CUDA_SUCCESS) {
    return std::nullopt;
  }
  nodes.resize(std::min(count, nodes.size()));
  return nodes;
}

// The node's type as an int: a newer driver may report one beyond the enum.
std::optional<int> TypeOf(const CudaGraphFunctions& f, CUgraphNode node) {
  CUgraphNodeType reported{};
  if (node == nullptr || f.node_get_type(node, &reported) != CUDA_SUCCESS) {
    return std::nullopt;
  }
  static_assert(sizeof(reported) == sizeof(int));
  int type = 0;
  std::memcpy(&type, &reported, sizeof(type));
  return type;
}

}  // namespace

std::vector<ChildNodeLink> LinkChildGraphNodes(const CudaGraphFunctions& functions,
                                               const GraphNodeIdOf& node_id_of,
                                               CUgraph graph, uint32_t exec_id) {
  if (!functions.complete() || !node_id_of || exec_id == 0) return {};
  const std::optional<std::vector<CUgraphNode>> top = Nodes(functions, graph);
  if (!top.has_value()) return {};
  const uint64_t base = static_cast<uint64_t>(exec_id) << 32;
  uint64_t index = top->size();  // inner nodes are numbered after the top level
  std::vector<ChildNodeLink> links;
  for (CUgraphNode node : *top) {
    const std::optional<int> type = TypeOf(functions, node);
    if (!type.has_value()) return {};
    if (*type != CU_GRAPH_NODE_TYPE_GRAPH) continue;
    uint64_t child_node_id = 0;
    CUgraph child = nullptr;
    if (!node_id_of(node, &child_node_id) ||
        functions.child_graph_node_get_graph(node, &child) != CUDA_SUCCESS) {
      return {};
    }
    const std::optional<std::vector<CUgraphNode>> inner = Nodes(functions, child);
    if (!inner.has_value()) return {};
    for (CUgraphNode inner_node : *inner) {
      const std::optional<int> inner_type = TypeOf(functions, inner_node);
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
