#include "runtime/cupti/cuda_driver.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "runtime/cupti/graph_record_count.h"

namespace deepcontext::cupti {
namespace {

using GetFn = CUresult (*)(CUdevice*, int);
using GetAttributeFn = CUresult (*)(int*, CUdevice_attribute, CUdevice);
using GetNameFn = CUresult (*)(char*, int, CUdevice);
using TotalMemFn = CUresult (*)(size_t*, CUdevice);
using GetCountFn = CUresult (*)(int*);
using DriverVersionFn = CUresult (*)(int*);
using GetUuidFn = CUresult (*)(CUuuid*, CUdevice);
using CtxGetCurrentFn = CUresult (*)(CUcontext*);
using CtxSynchronizeFn = CUresult (*)();
using PrimaryCtxGetStateFn = CUresult (*)(CUdevice, unsigned*, int*);
using PrimaryCtxRetainFn = CUresult (*)(CUcontext*, CUdevice);
using PrimaryCtxReleaseFn = CUresult (*)(CUdevice);
using CtxPushCurrentFn = CUresult (*)(CUcontext);
using CtxPopCurrentFn = CUresult (*)(CUcontext*);

template <typename Fn>
Fn As(void* symbol) {
  return reinterpret_cast<Fn>(symbol);
}

}  // namespace

gpu::DeviceInfo DeviceInfoFromAttributes(const DeviceAttributes& a) {
  gpu::DeviceInfo info = gpu::DeviceInfoForArch(a.compute_major, a.compute_minor, a.sm_count);
  if (!info.Valid()) {
    // An architecture newer than the table: the granularities have been
    // stable since sm_80, so use those; the limits come from the driver.
    const gpu::DeviceInfo newest = gpu::DeviceInfoForArch(9, 0, a.sm_count);
    info.reg_alloc_unit = newest.reg_alloc_unit;
    info.sub_partitions = newest.sub_partitions;
    info.shared_alloc_unit = newest.shared_alloc_unit;
    info.max_regs_per_thread = newest.max_regs_per_thread;
    info.reserved_shared_per_block = newest.reserved_shared_per_block;
  }
  info.compute_major = a.compute_major;
  info.compute_minor = a.compute_minor;
  info.sm_count = a.sm_count;
  if (!a.name.empty()) info.name = a.name;
  info.total_memory_bytes = a.total_memory_bytes;
  auto take = [](auto value, auto* field) {
    if (value > 0) *field = value;
  };
  take(a.warp_size, &info.warp_size);
  take(a.max_threads_per_block, &info.max_threads_per_block);
  take(a.max_threads_per_sm, &info.max_threads_per_sm);
  take(a.max_blocks_per_sm, &info.max_blocks_per_sm);
  take(a.regs_per_sm, &info.regs_per_sm);
  take(a.max_regs_per_block, &info.max_regs_per_block);
  take(a.shared_per_sm, &info.shared_per_sm);
  take(a.shared_per_block_optin, &info.shared_per_block_optin);
  // 0 keeps the table's value, which is 0 itself before sm_80.
  take(a.reserved_shared_per_block, &info.reserved_shared_per_block);
  return info;
}

StatusOr<std::unique_ptr<CudaDriver>> CudaDriver::Load() {
  std::string name = "libcuda.so.1";
  if (const char* path = std::getenv("DEEPCONTEXT_CUDA_DRIVER")) {
    if (path[0] != '\0') name = path;
  }
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    return Status::Error("no NVIDIA driver: cannot load " + name +
                         (reason != nullptr ? std::string(" (") + reason + ")" : ""));
  }
  std::unique_ptr<CudaDriver> driver(new CudaDriver());
  driver->get_ = dlsym(handle, "cuDeviceGet");
  driver->get_attribute_ = dlsym(handle, "cuDeviceGetAttribute");
  driver->get_name_ = dlsym(handle, "cuDeviceGetName");
  driver->total_memory_ = dlsym(handle, "cuDeviceTotalMem_v2");
  driver->get_count_ = dlsym(handle, "cuDeviceGetCount");
  driver->driver_version_ = dlsym(handle, "cuDriverGetVersion");
  // _v2 names a MIG instance by its own UUID; the first one names the GPU.
  driver->get_uuid_ = dlsym(handle, "cuDeviceGetUuid_v2");
  if (driver->get_uuid_ == nullptr) driver->get_uuid_ = dlsym(handle, "cuDeviceGetUuid");
  driver->graph_get_nodes_ = dlsym(handle, "cuGraphGetNodes");
  driver->graph_node_get_type_ = dlsym(handle, "cuGraphNodeGetType");
  driver->graph_child_graph_ = dlsym(handle, "cuGraphChildGraphNodeGetGraph");
  driver->ctx_get_current_ = dlsym(handle, "cuCtxGetCurrent");
  driver->ctx_synchronize_ = dlsym(handle, "cuCtxSynchronize");
  // The names cuda.h maps these calls to (the unversioned ones keep an
  // older ABI).
  driver->primary_ctx_get_state_ = dlsym(handle, "cuDevicePrimaryCtxGetState");
  driver->primary_ctx_retain_ = dlsym(handle, "cuDevicePrimaryCtxRetain");
  driver->primary_ctx_release_ = dlsym(handle, "cuDevicePrimaryCtxRelease_v2");
  driver->ctx_push_current_ = dlsym(handle, "cuCtxPushCurrent_v2");
  driver->ctx_pop_current_ = dlsym(handle, "cuCtxPopCurrent_v2");
  if (driver->get_ == nullptr || driver->get_attribute_ == nullptr ||
      driver->get_name_ == nullptr || driver->get_count_ == nullptr ||
      driver->driver_version_ == nullptr) {
    return Status::Error("no NVIDIA driver: " + name + " lacks the device query functions");
  }
  return driver;
}

bool CudaDriver::QueryDevice(uint32_t ordinal, DeviceAttributes* out) const {
  CUdevice device = 0;
  if (As<GetFn>(get_)(&device, static_cast<int>(ordinal)) != CUDA_SUCCESS) {
    return false;
  }
  const auto get_attribute = As<GetAttributeFn>(get_attribute_);
  // Attributes an older driver does not know read as 0, which keeps the
  // architecture table's value.
  auto query = [&](CUdevice_attribute attribute) {
    int value = 0;
    return get_attribute(&value, attribute, device) == CUDA_SUCCESS ? value : 0;
  };
  DeviceAttributes a;
  a.compute_major = query(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  a.compute_minor = query(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  a.sm_count = query(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  if (a.compute_major <= 0 || a.sm_count <= 0) return false;
  a.warp_size = query(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  a.max_threads_per_block = query(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  a.max_threads_per_sm = query(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  a.max_blocks_per_sm = query(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  a.regs_per_sm = query(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  a.max_regs_per_block = query(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  a.shared_per_sm = query(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  a.shared_per_block_optin =
      query(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  a.reserved_shared_per_block =
      query(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  char name[256] = {0};
  if (As<GetNameFn>(get_name_)(name, sizeof(name) - 1, device) == CUDA_SUCCESS) {
    a.name = name;
  }
  size_t total = 0;
  if (total_memory_ != nullptr &&
      As<TotalMemFn>(total_memory_)(&total, device) == CUDA_SUCCESS) {
    a.total_memory_bytes = static_cast<int64_t>(total);
  }
  *out = std::move(a);
  return true;
}

int CudaDriver::DriverVersion() const {
  int version = 0;
  if (As<DriverVersionFn>(driver_version_)(&version) != CUDA_SUCCESS) return 0;
  return version;
}

void CudaDriver::GraphFunctions(CudaGraphFunctions* functions) const {
  functions->get_nodes = As<decltype(functions->get_nodes)>(graph_get_nodes_);
  functions->node_get_type =
      As<decltype(functions->node_get_type)>(graph_node_get_type_);
  functions->child_graph_node_get_graph =
      As<decltype(functions->child_graph_node_get_graph)>(graph_child_graph_);
}

uint32_t CudaDriver::GraphRecords(void* graph,
                                  const TracedActivity& traced) const {
  CudaGraphFunctions functions;
  GraphFunctions(&functions);
  return CountGraphRecords(functions, static_cast<CUgraph>(graph), traced);
}

bool CudaDriver::SynchronizeAllContexts() const {
  if (ctx_get_current_ == nullptr || ctx_synchronize_ == nullptr ||
      primary_ctx_get_state_ == nullptr || primary_ctx_retain_ == nullptr ||
      primary_ctx_release_ == nullptr || ctx_push_current_ == nullptr ||
      ctx_pop_current_ == nullptr) {
    return false;
  }
  bool all = true;
  CUcontext current = nullptr;
  if (As<CtxGetCurrentFn>(ctx_get_current_)(&current) == CUDA_SUCCESS &&
      current != nullptr) {
    all = As<CtxSynchronizeFn>(ctx_synchronize_)() == CUDA_SUCCESS;
  }
  const int count = DeviceCount();  // -1: the driver was never initialized
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice device = 0;
    unsigned flags = 0;
    int active = 0;
    if (As<GetFn>(get_)(&device, ordinal) != CUDA_SUCCESS ||
        As<PrimaryCtxGetStateFn>(primary_ctx_get_state_)(device, &flags,
                                                          &active) !=
            CUDA_SUCCESS) {
      all = false;
      continue;
    }
    if (active == 0) continue;
    CUcontext context = nullptr;
    if (As<PrimaryCtxRetainFn>(primary_ctx_retain_)(&context, device) !=
        CUDA_SUCCESS) {
      all = false;
      continue;
    }
    if (context != current) {
      if (As<CtxPushCurrentFn>(ctx_push_current_)(context) == CUDA_SUCCESS) {
        all = As<CtxSynchronizeFn>(ctx_synchronize_)() == CUDA_SUCCESS && all;
        CUcontext popped = nullptr;
        As<CtxPopCurrentFn>(ctx_pop_current_)(&popped);
      } else {
        all = false;
      }
    }
    As<PrimaryCtxReleaseFn>(primary_ctx_release_)(device);
  }
  return all;
}

std::string CudaDriver::DeviceUuid(uint32_t ordinal) const {
  CUdevice device = 0;
  CUuuid uuid{};
  if (get_uuid_ == nullptr ||
      As<GetFn>(get_)(&device, static_cast<int>(ordinal)) != CUDA_SUCCESS ||
      As<GetUuidFn>(get_uuid_)(&uuid, device) != CUDA_SUCCESS) {
    return "";
  }
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char text[48];
  std::snprintf(text, sizeof(text),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return text;
}

int CudaDriver::DeviceCount() const {
  int count = 0;
  if (As<GetCountFn>(get_count_)(&count) != CUDA_SUCCESS) return -1;
  return count;
}

}  // namespace deepcontext::cupti
