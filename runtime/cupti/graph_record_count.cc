#include "runtime/cupti/graph_record_count.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

namespace deepcontext::cupti {

std::optional<std::vector<CUgraphNode>> GraphNodes(const CudaGraphFunctions& f, CUgraph graph) {
  size_t count = 0;
  if (graph == nullptr || f.get_nodes(graph, nullptr, &count) != CUDA_SUCCESS) {
    return std::nullopt;
  }
  std::vector<CUgraphNode> nodes(count);
  if (count > 0 && f.get_nodes(graph, nodes.data(), &count) != CUDA_SUCCESS) {
    return std::nullopt;
  }
  // The driver reports how many it wrote, which is fewer only if the graph
  // changed between the calls.
  nodes.resize(std::min(count, nodes.size()));
  return nodes;
}

std::optional<int> GraphNodeType(const CudaGraphFunctions& f, CUgraphNode node) {
  CUgraphNodeType reported{};
  if (node == nullptr || f.node_get_type(node, &reported) != CUDA_SUCCESS) {
    return std::nullopt;
  }
  // Reading a value beyond the enum's range through the enum type would be
  // undefined, so read the bytes.
  static_assert(sizeof(reported) == sizeof(int));
  int type = 0;
  std::memcpy(&type, &reported, sizeof(type));
  return type;
}

namespace {

// Records of one graph, or nullopt when they cannot be known.
std::optional<uint64_t> Count(const CudaGraphFunctions& f, CUgraph graph,
                              const TracedActivity& traced, int depth) {
  if (depth > kMaxGraphDepth) return std::nullopt;
  const std::optional<std::vector<CUgraphNode>> nodes = GraphNodes(f, graph);
  if (!nodes.has_value()) return std::nullopt;
  uint64_t records = 0;
  for (CUgraphNode node : *nodes) {
    const std::optional<int> type = GraphNodeType(f, node);
    if (!type.has_value()) return std::nullopt;
    switch (*type) {
      case CU_GRAPH_NODE_TYPE_KERNEL:
        if (traced.kernels) ++records;
        break;
      case CU_GRAPH_NODE_TYPE_MEMCPY:
        // A peer copy is reported under the other copy kind.
        if (traced.copies != traced.peer_copies) return std::nullopt;
        if (traced.copies) ++records;
        break;
      case CU_GRAPH_NODE_TYPE_MEMSET:
        if (traced.memsets) ++records;
        break;
      case CU_GRAPH_NODE_TYPE_GRAPH: {
        CUgraph child = nullptr;
        if (f.child_graph_node_get_graph(node, &child) != CUDA_SUCCESS) {
          return std::nullopt;
        }
        const std::optional<uint64_t> inner = Count(f, child, traced, depth + 1);
        if (!inner.has_value()) return std::nullopt;
        records += *inner;
        break;
      }
      case CU_GRAPH_NODE_TYPE_HOST:
      case CU_GRAPH_NODE_TYPE_EMPTY:
      case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
      case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
      case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      case CU_GRAPH_NODE_TYPE_MEM_FREE:
      case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
        break;
      case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      default:
        return std::nullopt;
    }
  }
  return records;
}

}  // namespace

uint32_t CountGraphRecords(const CudaGraphFunctions& functions, CUgraph graph,
                           const TracedActivity& traced) {
  if (!functions.complete()) return 0;
  const std::optional<uint64_t> records = Count(functions, graph, traced, 0);
  if (!records.has_value() || *records > std::numeric_limits<uint32_t>::max()) {
    return 0;
  }
  return static_cast<uint32_t>(*records);
}

}  // namespace deepcontext::cupti
