// How many activity records one launch of a CUDA graph produces, counted
// from the graph it was instantiated from, so that attribution can forget a
// graph launch as soon as its last record arrived instead of keeping it
// until a flush. Includes the vendor's cuda.h: include it from .cc files
// only.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/cupti/driver_api.h"

namespace deepcontext::cupti {

// The driver's graph queries, resolved by CudaDriver; tests pass fakes.
struct CudaGraphFunctions {
  decltype(&::cuGraphGetNodes) get_nodes = nullptr;
  decltype(&::cuGraphNodeGetType) node_get_type = nullptr;
  decltype(&::cuGraphChildGraphNodeGetGraph) child_graph_node_get_graph = nullptr;

  bool complete() const {
    return get_nodes != nullptr && node_get_type != nullptr &&
           child_graph_node_get_graph != nullptr;
  }
};

// The nodes of `graph`; nullopt when the driver cannot list them.
std::optional<std::vector<CUgraphNode>> GraphNodes(const CudaGraphFunctions& functions,
                                                   CUgraph graph);
// A node's type as an int: a newer driver may report one beyond the enum.
// nullopt when the query fails.
std::optional<int> GraphNodeType(const CudaGraphFunctions& functions, CUgraphNode node);

// Child graphs nested deeper than this make the count unknown.
inline constexpr int kMaxGraphDepth = 32;

// Records per launch of an executable graph instantiated from `graph`: one
// per kernel node, memcpy node and memset node whose activity kind is
// traced, plus those of child graphs; none for empty, host, event, wait,
// semaphore, allocation and batch-memop nodes. 0 when not knowable: the
// graph has a conditional node (its body runs a data-dependent number of
// times) or a node type newer than this code, a copy node while only one of
// the copy kinds is traced, nesting beyond kMaxGraphDepth, or a failing
// query. A graph without record-producing nodes also gives 0, which callers
// treat as unknown like the rest. Must be called while `graph` is alive
// (the GRAPHEXEC_CREATED callback).
uint32_t CountGraphRecords(const CudaGraphFunctions& functions, CUgraph graph,
                           const TracedActivity& traced);

}  // namespace deepcontext::cupti
