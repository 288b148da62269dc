// CUDA graphs that tests build by hand, and driver-compatible functions
// that walk them. cuda.h only declares CUgraph_st and CUgraphNode_st, so
// the tests define them; the fake libcuda (fake_cuda_driver.cc) exports the
// same functions as cuGraphGetNodes, cuGraphNodeGetType and
// cuGraphChildGraphNodeGetGraph, so graphs built in a test can be walked
// through a CudaDriver loaded from it.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/cupti/graph_record_count.h"

struct CUgraphNode_st {
  // An int, so tests can give types newer than the headers' enum.
  int type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUgraph child = nullptr;  // the embedded graph of a child graph node
  bool broken = false;      // cuGraphNodeGetType fails on it
};

struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;

  CUgraphNode Add(int type, CUgraph child = nullptr) {
    nodes.push_back(std::make_unique<CUgraphNode_st>());
    nodes.back()->type = type;
    nodes.back()->child = child;
    return nodes.back().get();
  }
};

namespace fake_cuda {

inline CUresult GraphGetNodes(CUgraph graph, CUgraphNode* nodes,
                              size_t* count) {
  if (graph == nullptr || count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (nodes == nullptr) {
    *count = graph->nodes.size();
    return CUDA_SUCCESS;
  }
  size_t i = 0;
  for (; i < *count && i < graph->nodes.size(); ++i) {
    nodes[i] = graph->nodes[i].get();
  }
  for (size_t j = i; j < *count; ++j) nodes[j] = nullptr;
  *count = i;
  return CUDA_SUCCESS;
}

inline CUresult GraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  if (node == nullptr || node->broken) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(type, &node->type, sizeof(node->type));  // as a C driver would
  return CUDA_SUCCESS;
}

inline CUresult GraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph* child) {
  if (node == nullptr || node->type != CU_GRAPH_NODE_TYPE_GRAPH) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *child = node->child;
  return CUDA_SUCCESS;
}

// The three as the graph walks take them (CudaDriver::GraphFunctions).
inline deepcontext::cupti::CudaGraphFunctions GraphFunctions() {
  deepcontext::cupti::CudaGraphFunctions f;
  f.get_nodes = &GraphGetNodes;
  f.node_get_type = &GraphNodeGetType;
  f.child_graph_node_get_graph = &GraphChildGraphNodeGetGraph;
  return f;
}

}  // namespace fake_cuda
