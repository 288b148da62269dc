#include "runtime/cupti/activity_parser.h"

#include <cupti.h>

namespace deepcontext::cupti {
namespace {

gpu::MemoryKind ToMemoryKind(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return gpu::MemoryKind::kPageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return gpu::MemoryKind::kPinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return gpu::MemoryKind::kDevice;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return gpu::MemoryKind::kArray;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return gpu::MemoryKind::kManaged;
    default:
      return gpu::MemoryKind::kUnknown;
  }
}

// CUDA arrays are device memory with a texture layout; for advice they are
// device memory, so array kinds fold into the device directions.
gpu::CopyKind ToCopyKind(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return gpu::CopyKind::kHostToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return gpu::CopyKind::kDeviceToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return gpu::CopyKind::kDeviceToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return gpu::CopyKind::kHostToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return gpu::CopyKind::kPeerToPeer;
    default:
      return gpu::CopyKind::kUnknown;
  }
}

gpu::SyncKind ToSyncKind(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return gpu::SyncKind::kEvent;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return gpu::SyncKind::kStreamWaitEvent;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return gpu::SyncKind::kStream;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return gpu::SyncKind::kContext;
    default:
      return gpu::SyncKind::kUnknown;
  }
}

uint32_t NonNegative(int32_t value) {
  return value > 0 ? static_cast<uint32_t>(value) : 0;
}

// The fields every device-side activity (kernel, copy, memset) shares; the
// CUPTI structs name them alike.
template <typename Activity, typename Record>
void ParsePlacement(const Activity& in, Record* out) {
  out->correlation_id = in.correlationId;
  out->device = in.deviceId;
  out->context_id = in.contextId;
  out->stream = in.streamId;
  out->graph_node_id = in.graphNodeId;
  out->start_ns = in.start;
  out->end_ns = in.end;
}

void ParseKernel(const CUpti_ActivityKernel10& in, gpu::KernelRecord* out) {
  ParsePlacement(in, out);
  out->graph_id = in.graphId;
  out->name = in.name != nullptr ? in.name : "<unknown kernel>";
  out->grid_x = in.gridX;
  out->grid_y = in.gridY;
  out->grid_z = in.gridZ;
  out->block_x = in.blockX;
  out->block_y = in.blockY;
  out->block_z = in.blockZ;
  out->registers_per_thread = in.registersPerThread;
  out->static_shared_bytes = NonNegative(in.staticSharedMemory);
  out->dynamic_shared_bytes = NonNegative(in.dynamicSharedMemory);
  out->shared_carveout_bytes = in.sharedMemoryExecuted;
}

template <typename Copy>
void ParseCopyCommon(const Copy& in, gpu::MemcpyRecord* out) {
  ParsePlacement(in, out);
  out->bytes = in.bytes;
  out->kind = ToCopyKind(in.copyKind);
  out->src_kind = ToMemoryKind(in.srcKind);
  out->dst_kind = ToMemoryKind(in.dstKind);
}

}  // namespace

ActivityType ParseActivity(const void* record, ParsedActivity* out) {
  if (record == nullptr || out == nullptr) return ActivityType::kUnsupported;
  const auto* activity = static_cast<const CUpti_Activity*>(record);
  switch (activity->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      ParseKernel(*static_cast<const CUpti_ActivityKernel10*>(record), &out->kernel);
      return ActivityType::kKernel;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      out->memcpy = gpu::MemcpyRecord{};
      ParseCopyCommon(*static_cast<const CUpti_ActivityMemcpy6*>(record),
                      &out->memcpy);
      return ActivityType::kMemcpy;
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      out->memcpy = gpu::MemcpyRecord{};
      ParseCopyCommon(*static_cast<const CUpti_ActivityMemcpyPtoP4*>(record),
                      &out->memcpy);
      return ActivityType::kMemcpy;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& in = *static_cast<const CUpti_ActivityMemset4*>(record);
      gpu::MemsetRecord& m = out->memset;
      m = gpu::MemsetRecord{};
      ParsePlacement(in, &m);
      m.bytes = in.bytes;
      m.memory_kind = ToMemoryKind(in.memoryKind);
      return ActivityType::kMemset;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& in = *static_cast<const CUpti_ActivitySynchronization2*>(record);
      gpu::SyncRecord& s = out->sync;
      s = gpu::SyncRecord{};
      s.correlation_id = in.correlationId;
      s.context_id = in.contextId;
      s.stream = in.streamId;
      s.start_ns = in.start;
      s.end_ns = in.end;
      s.kind = ToSyncKind(in.type);
      return ActivityType::kSync;
    }
    default:
      return ActivityType::kUnsupported;
  }
}

}  // namespace deepcontext::cupti
