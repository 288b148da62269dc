// A stand-in for libcuda.so.1 with the device queries CudaDriver uses,
// describing two H200s, the graph queries over the graphs of
// fake_cuda_graph.h, and a current context the test sets (through
// fake_cuda_set_current_context) and primary contexts it turns active,
// whose synchronizations it counts (fake_cuda_synchronize_count), so the
// driver path can be tested without a GPU.
#include <cuda.h>

#include <unistd.h>

#include <cstring>
#include <map>
#include <vector>

#include "tests/unit/runtime/cupti/fake_cuda_graph.h"

namespace {
constexpr int kDevices = 2;
// The contexts current on the calling thread, innermost last.
thread_local std::vector<CUcontext> t_context_stack;
CUctx_st* g_primary[kDevices] = {reinterpret_cast<CUctx_st*>(0x1000),
                                  reinterpret_cast<CUctx_st*>(0x2000)};
bool g_primary_active[kDevices] = {false, false};
int g_primary_retained[kDevices] = {0, 0};
std::map<CUcontext, int> g_synchronized;
bool g_fail_synchronize = false;
}  // namespace

extern "C" {

// Test controls: the calling thread's current context (nullptr: none),
// whether a device's primary context is active, whether synchronizing
// fails; and what happened.
__attribute__((visibility("default"))) void fake_cuda_set_current_context(
    CUcontext context) {
  t_context_stack.clear();
  if (context != nullptr) t_context_stack.push_back(context);
}

__attribute__((visibility("default"))) CUcontext fake_cuda_primary_context(int device) {
  return g_primary[device];
}

__attribute__((visibility("default"))) void fake_cuda_set_primary_active(int device,
                                                                          int active) {
  g_primary_active[device] = active != 0;
}

__attribute__((visibility("default"))) void fake_cuda_fail_synchronize(int fail) {
  g_fail_synchronize = fail != 0;
}

__attribute__((visibility("default"))) int fake_cuda_synchronize_count(CUcontext context) {
  return g_synchronized[context];
}

__attribute__((visibility("default"))) int fake_cuda_primary_retained(int device) {
  return g_primary_retained[device];
}

__attribute__((visibility("default"))) CUresult cuCtxGetCurrent(CUcontext* context) {
  *context = t_context_stack.empty() ? nullptr : t_context_stack.back();
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuCtxSynchronize() {
  if (t_context_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (g_fail_synchronize) return CUDA_ERROR_LAUNCH_FAILED;
  ++g_synchronized[t_context_stack.back()];
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuCtxPushCurrent_v2(CUcontext context) {
  t_context_stack.push_back(context);
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuCtxPopCurrent_v2(CUcontext* context) {
  if (t_context_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (context != nullptr) *context = t_context_stack.back();
  t_context_stack.pop_back();
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxGetState(
    CUdevice device, unsigned* flags, int* active) {
  if (device < 0 || device >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
  *flags = 0;
  *active = g_primary_active[device] ? 1 : 0;
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxRetain(
    CUcontext* context, CUdevice device) {
  if (device < 0 || device >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
  ++g_primary_retained[device];
  *context = g_primary[device];
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxRelease_v2(
    CUdevice device) {
  if (device < 0 || device >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
  --g_primary_retained[device];
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

// Unique to the test process, so that concurrent tests claiming a device
// (runtime/gpu/counter_claims.h) never meet.
__attribute__((visibility("default"))) CUresult cuDeviceGetUuid_v2(CUuuid* uuid,
                                                                   CUdevice device) {
  if (device < 0 || device >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
  std::memset(uuid->bytes, 0, sizeof(uuid->bytes));
  const unsigned pid = static_cast<unsigned>(getpid());
  const unsigned char bytes[] = {0xfa, 0xce, 0, static_cast<unsigned char>(device),
                                 static_cast<unsigned char>(pid >> 24),
                                 static_cast<unsigned char>(pid >> 16),
                                 static_cast<unsigned char>(pid >> 8),
                                 static_cast<unsigned char>(pid)};
  std::memcpy(uuid->bytes, bytes, sizeof(bytes));
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetName(char* name, int length,
                                                                CUdevice) {
  std::strncpy(name, "NVIDIA H200", static_cast<size_t>(length));
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceTotalMem_v2(size_t* bytes,
                                                                    CUdevice) {
  *bytes = size_t{150754820096};  // an H200's 140.4 GiB
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
