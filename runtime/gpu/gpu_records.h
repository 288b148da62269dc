// Vendor-neutral GPU activity records. The CUPTI backend converts its
// activity structs into these (activity_parser.h), so attribution, tests
// and a later ROCm backend share one vocabulary and never see vendor
// headers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace deepcontext::gpu {

// A calling context id (the value of a dlmonitor_context_t). 0 = none.
using ContextId = uint64_t;

// Where the bytes of one side of a copy, or of a memset, live. The
// distinction that matters for advice is pageable vs pinned host memory:
// pageable copies are staged and block the host.
enum class MemoryKind : uint8_t {
  kUnknown = 0,
  kPageable = 1,
  kPinned = 2,
  kDevice = 3,
  kArray = 4,
  kManaged = 5,
};

// Direction of a copy, folded from the vendor's finer kinds (arrays count
// as device memory).
enum class CopyKind : uint8_t {
  kUnknown = 0,
  kHostToDevice = 1,
  kDeviceToHost = 2,
  kDeviceToDevice = 3,
  kHostToHost = 4,
  kPeerToPeer = 5,
};

// What a synchronization record waited for.
enum class SyncKind : uint8_t {
  kUnknown = 0,
  kEvent = 1,            // event synchronize
  kStreamWaitEvent = 2,  // stream wait event (device side wait)
  kStream = 3,           // stream synchronize
  kContext = 4,          // context / device synchronize
};

// One GPU API call that may produce activity records, captured on the
// calling thread at API entry.
struct LaunchRecord {
  uint64_t correlation_id = 0;
  ContextId context = 0;       // caller's calling context at API entry
  std::string_view api_name;   // "cuLaunchKernel"; copied by the consumer
  uint64_t thread = 0;         // OS thread id of the caller
  // How many activity records the call produces: 1 for a plain kernel
  // launch, copy, memset or synchronization; the node count for a graph
  // launch when the backend knows it; 0 when unknown (the correlation is
  // then kept until a flush or until evicted as the oldest).
  uint32_t expected_records = 1;
  // A synchronization: its record is made when the call returns, which a
  // thread blocked in it may delay without bound, so a missing record says
  // nothing about whether records still reach the profiler.
  bool record_at_return = false;
};

// A kernel execution.
struct KernelRecord {
  uint64_t correlation_id = 0;
  uint32_t device = 0;
  uint32_t context_id = 0;  // vendor GPU context, not a calling context
  uint32_t stream = 0;
  uint32_t graph_id = 0;       // 0 = not launched from a graph
  uint64_t graph_node_id = 0;  // 0 = not launched from a graph
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::string name;  // as reported by the vendor (usually mangled)
  int32_t grid_x = 0, grid_y = 0, grid_z = 0;
  int32_t block_x = 0, block_y = 0, block_z = 0;
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_bytes = 0;   // per block
  uint32_t dynamic_shared_bytes = 0;  // per block
  // Shared memory carveout the SM ran with; 0 = unknown (the device's
  // maximum is assumed for occupancy).
  uint32_t shared_carveout_bytes = 0;
};

// A memory copy.
struct MemcpyRecord {
  uint64_t correlation_id = 0;
  uint32_t device = 0;
  uint32_t context_id = 0;
  uint32_t stream = 0;
  uint64_t graph_node_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t bytes = 0;
  CopyKind kind = CopyKind::kUnknown;
  MemoryKind src_kind = MemoryKind::kUnknown;
  MemoryKind dst_kind = MemoryKind::kUnknown;
};

// A memory set.
struct MemsetRecord {
  uint64_t correlation_id = 0;
  uint32_t device = 0;
  uint32_t context_id = 0;
  uint32_t stream = 0;
  uint64_t graph_node_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t bytes = 0;
  MemoryKind memory_kind = MemoryKind::kUnknown;
};

// Time a host thread (or, for kStreamWaitEvent, a stream) spent waiting.
struct SyncRecord {
  uint64_t correlation_id = 0;
  uint32_t context_id = 0;
  uint32_t stream = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  SyncKind kind = SyncKind::kUnknown;
};

// "HtoD", "DtoH", ...: the short names used in node names.
std::string_view CopyKindName(CopyKind kind);
// "event", "stream", ...: the short names used in node names.
std::string_view SyncKindName(SyncKind kind);
// True for host memory whose copies are staged through a bounce buffer.
inline bool IsPageable(MemoryKind kind) { return kind == MemoryKind::kPageable; }

}  // namespace deepcontext::gpu
