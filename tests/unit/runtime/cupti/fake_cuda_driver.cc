// A stand-in for libcuda.so.1 with the device queries CudaDriver uses,
// describing two H200s, the graph queries over the graphs of
// fake_cuda_graph.h, and a current context the test sets (through
// fake_cuda_set_current_context) whose synchronizations it counts
// (fake_cuda_synchronize_count), so the driver path can be tested without
// a GPU.
#include <cuda.h>

#include <cstring>

#include "tests/unit/runtime/cupti/fake_cuda_graph.h"

namespace {
CUcontext g_current_context = nullptr;
int g_synchronize_count = 0;
}  // namespace

extern "C" {

__attribute__((visibility("default"))) void fake_cuda_set_current_context(
    CUcontext context) {
  g_current_context = context;
}

__attribute__((visibility("default"))) int fake_cuda_synchronize_count() {
  return g_synchronize_count;
}

__attribute__((visibility("default"))) CUresult cuCtxGetCurrent(CUcontext* context) {
  *context = g_current_context;
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuCtxSynchronize() {
  if (g_current_context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  ++g_synchronize_count;
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetCount(int* count) {
  *count = 2;
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceGet(CUdevice* device,
                                                            int ordinal) {
  if (ordinal < 0 || ordinal >= 2) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetName(char* name, int length,
                                                                CUdevice) {
  std::strncpy(name, "NVIDIA H200", static_cast<size_t>(length));
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetAttribute(
    int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *value = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *value = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      *value = 233472;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 232448; break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *value = 1024; break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuGraphGetNodes(
    CUgraph graph, CUgraphNode* nodes, size_t* count) {
  return fake_cuda::GraphGetNodes(graph, nodes, count);
}

__attribute__((visibility("default"))) CUresult cuGraphNodeGetType(
    CUgraphNode node, CUgraphNodeType* type) {
  return fake_cuda::GraphNodeGetType(node, type);
}

__attribute__((visibility("default"))) CUresult cuGraphChildGraphNodeGetGraph(
    CUgraphNode node, CUgraph* child) {
  return fake_cuda::GraphChildGraphNodeGetGraph(node, child);
}

}  // extern "C"
