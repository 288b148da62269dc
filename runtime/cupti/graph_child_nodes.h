// The node ids that an executable CUDA graph's kernels, copies and memsets
// inside child graph nodes carry in their activity records, linked to the
// source graph's nodes they were instantiated from. CUPTI reports each
// top-level node of an instantiation as GRAPHNODE_CLONED (executable node ->
// source node), but never the nodes inside child graphs; their records
// carry ids nothing announced. XLA's command buffers put every traced
// command (a stream-captured cuBLAS GEMM) in such a child graph, so without
// this link those kernels stay under the graph launch.
//
// Measured (CUDA 13.0, CUPTI 13.0.1, driver 580, H200; fixture
// tests/unit/runtime/xla/fixtures/attention_step.jsonl.gz): an executable
// graph's node id is (executable graph id << 32) | index; indices go first to
// the top-level nodes in the source graph's order (cuGraphGetNodes), then to
// the nodes of each child graph node in turn, in the child graph's order.
// Only that one level of nesting was seen: a graph whose child graphs hold
// child graphs themselves gets no links. Before trusting the numbering, the
// top-level clones CUPTI announced during the instantiation are checked
// against it (AnnouncedClones): exactly one per top-level node, indices 0
// to n-1. Includes the vendor's cuda.h: include it from .cc files only.
#pragma once

#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/cupti/graph_record_count.h"

namespace deepcontext::cupti {

struct ChildNodeLink {
  uint64_t exec_node = 0;    // the id the node's records carry
  uint64_t source_node = 0;  // the node in the source graph's child graph
  // The child graph node (top level) that holds it: where the command was
  // recorded, should its inner node be unknown.
  uint64_t child_graph_node = 0;
};

// The GRAPHNODE_CLONED nodes one thread saw, per graph id (the high 32 bits
// of a node id): how many, and the highest index. Kept per thread (an
// instantiation's callbacks come on its thread); a few graphs at a time
// (clones outside instantiations, e.g. cuGraphAddChildGraphNode's, come
// and go), so beyond kMaxGraphs the one least recently cloned into is
// dropped.
class AnnouncedClones {
 public:
  struct Range {
    uint32_t count = 0;
    uint32_t highest = 0;
  };
  void Add(uint64_t node_id);
  // The range of graph `graph_id`, forgetting every graph's.
  Range Take(uint32_t graph_id);

 private:
  static constexpr size_t kMaxGraphs = 64;
  struct Entry {
    uint32_t graph = 0;
    Range range;
  };
  // Trivially destructible: it lives in thread-local storage of every
  // thread that clones graph nodes.
  std::array<Entry, kMaxGraphs> entries_{};  // least recently cloned into first
  size_t size_ = 0;
};

// CUPTI's id of a graph node (cuptiGetGraphNodeId); false when it has none.
using GraphNodeIdOf = std::function<bool(CUgraphNode, uint64_t*)>;

// The links of an executable graph with CUPTI id `exec_id`, instantiated from
// `graph`, whose top-level clones were `announced`; empty when the graph
// has no child graph node, nests child graphs deeper than one level, a
// query fails, or the announced clones do not number its top-level nodes
// 0 to n-1. Must be called while `graph` is alive (the GRAPHEXEC_CREATED
// callback).
std::vector<ChildNodeLink> LinkChildGraphNodes(const CudaGraphFunctions& functions,
                                               const GraphNodeIdOf& node_id_of,
                                               CUgraph graph, uint32_t exec_id,
                                               AnnouncedClones::Range announced);

}  // namespace deepcontext::cupti
