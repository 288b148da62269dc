// The few CUDA driver calls the backend makes itself: device limits for
// occupancy, device names and the driver version for the profile, and the
// graph queries that count a graph's records. libcuda is
// opened with dlopen, so a machine without an NVIDIA driver is detected
// before CUPTI is touched (CUPTI then fails with an unhelpful "unknown
// error"). The backend never calls cuInit: initializing the driver is left
// to the program, whose forked children could not use CUDA otherwise. No
// vendor headers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "runtime/cupti/driver_api.h"
#include "runtime/gpu/occupancy.h"

namespace deepcontext::cupti {

struct CudaGraphFunctions;  // graph_record_count.h (vendor header)

// The driver attributes occupancy depends on; 0 = not reported.
struct DeviceAttributes {
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  int warp_size = 0;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  int regs_per_sm = 0;
  int max_regs_per_block = 0;
  int64_t shared_per_sm = 0;
  int64_t shared_per_block_optin = 0;
  int64_t reserved_shared_per_block = 0;
  int64_t total_memory_bytes = 0;
};

// Device limits from driver attributes. Allocation granularities, which the
// driver does not report, come from DeviceInfoForArch(), or, for
// architectures it does not know, from the rules of the newest one it does.
gpu::DeviceInfo DeviceInfoFromAttributes(const DeviceAttributes& attributes);

class CudaDriver {
 public:
  // Opens libcuda.so.1 (or the library named by $DEEPCONTEXT_CUDA_DRIVER).
  // The error ("no NVIDIA driver: ...") says whether it cannot be loaded or
  // lacks the entry points, for the profile's status line. Never throws.
  static StatusOr<std::unique_ptr<CudaDriver>> Load();

  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;
  // Keeps the library loaded: the program uses it too.
  ~CudaDriver() = default;

  // Attributes of the device with this ordinal (as in CUPTI's deviceId).
  // False when the driver is not initialized yet or the query fails.
  // [any thread]
  bool QueryDevice(uint32_t ordinal, DeviceAttributes* attributes) const;
  // cuDriverGetVersion(), e.g. 13000; 0 when unknown.
  int DriverVersion() const;
  // The device's UUID as nvidia-smi writes it ("GPU-5a1c2e3f-..."), the
  // same in every process whatever CUDA_VISIBLE_DEVICES says; "" when
  // unknown. [any thread]
  std::string DeviceUuid(uint32_t ordinal) const;
  // Devices visible to the program; -1 before the driver is initialized.
  int DeviceCount() const;
  // Activity records per launch of an executable graph instantiated from
  // `graph` (a CUgraph); 0 when unknown, including when the driver lacks
  // the graph queries. See CountGraphRecords(). [the thread that owns the
  // graph, e.g. inside the GRAPHEXEC_CREATED callback]
  uint32_t GraphRecords(void* graph, const TracedActivity& traced) const;
  // The driver's graph queries (members null when it lacks them).
  void GraphFunctions(CudaGraphFunctions* functions) const;
  // Waits for the context current on the calling thread and for the primary
  // context of every device where it is active (pushed and popped again, so
  // the thread's current context is unchanged). True when every wait
  // succeeded or there was nothing to wait for (no device initialized);
  // false when a wait failed or the driver lacks the calls. [any thread;
  // the calls it makes are traced like the program's when CUPTI callbacks
  // are on]
  bool SynchronizeAllContexts() const;

 private:
  CudaDriver() = default;

  // Entry points, typed in the .cc.
  void* get_ = nullptr;
  void* get_attribute_ = nullptr;
  void* get_name_ = nullptr;
  void* total_memory_ = nullptr;  // optional: the device's memory size
  void* get_count_ = nullptr;
  void* driver_version_ = nullptr;
  void* get_uuid_ = nullptr;  // optional: DeviceUuid() is "" without it
  // Optional: graph launches keep an unknown record count without them.
  void* graph_get_nodes_ = nullptr;
  void* graph_node_get_type_ = nullptr;
  void* graph_child_graph_ = nullptr;
  // Optional too: SynchronizeAllContexts() returns false without them.
  void* ctx_get_current_ = nullptr;
  void* ctx_synchronize_ = nullptr;
  void* primary_ctx_get_state_ = nullptr;
  void* primary_ctx_retain_ = nullptr;
  void* primary_ctx_release_ = nullptr;
  void* ctx_push_current_ = nullptr;
  void* ctx_pop_current_ = nullptr;
};

}  // namespace deepcontext::cupti
