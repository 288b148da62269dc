// The narrow interface through which GPU attribution creates calling-context
// nodes and records metrics. The production implementation wraps
// dlmonitor_context_child() and the profiler's MetricStore; tests use an
// in-memory fake. Keeping it this small lets the attribution logic be
// tested without DLMonitor, CUPTI or a GPU.
#pragma once

#include <cstdint>
#include <string_view>

#include "runtime/gpu/gpu_records.h"

namespace deepcontext::gpu {

// Kinds of the nodes attribution creates. The values equal the matching
// dlmonitor_frame_kind_t values, so the production sink can pass them
// through (it static_asserts the equality).
enum class GpuNodeKind : int {
  kPython = 2,     // DLMONITOR_FRAME_PYTHON: a source line (ChildAt)
  kOperator = 3,   // DLMONITOR_FRAME_OPERATOR: a framework operation (XLA's HLO op)
  kPhase = 4,      // DLMONITOR_FRAME_PHASE: "[forward]", "[backward]", "[compile]"
  kUserScope = 5,  // DLMONITOR_FRAME_USER_SCOPE: a named scope (jax.named_scope)
  kApi = 7,      // DLMONITOR_FRAME_GPU_API: "cuLaunchKernel", "<unattributed>"
  kKernel = 8,   // DLMONITOR_FRAME_GPU_KERNEL
  kMemcpy = 9,   // DLMONITOR_FRAME_GPU_MEMCPY
  kMemset = 10,  // DLMONITOR_FRAME_GPU_MEMSET
  kSync = 11,    // DLMONITOR_FRAME_GPU_SYNC
  kInstruction = 13,  // DLMONITOR_FRAME_GPU_INSTRUCTION: "pc 0x1a0"
};

// The metrics attribution records. Every sample is one record, so a
// metric's count is the number of kernels / copies / waits of a node; a
// kernel record without timestamps adds kUntimedLaunches instead of
// kGpuTime, so gpu_time's count is that of the timed launches.
enum class GpuMetric : int {
  kGpuTime = 0,            // ns a kernel, copy or memset ran
  kSyncTime = 1,           // ns a synchronization waited
  kBytes = 2,              // bytes copied or set
  kBlocks = 3,             // grid size (blocks per launch)
  kThreadsPerBlock = 4,    // block size
  kThreadsLaunched = 5,    // blocks x threads per block (parallelism)
  kRegistersPerThread = 6,
  kSharedMemoryBytes = 7,  // static + dynamic shared memory per block
  kOccupancy = 8,          // theoretical occupancy, 0..1
  kUntimedLaunches = 9,    // 1 per kernel record without a duration
  kCount = 10,
};

// Stable name, unit and description of a metric, as stored in the profile.
struct GpuMetricInfo {
  std::string_view name;
  std::string_view unit;
  std::string_view description;
};
const GpuMetricInfo& MetricInfo(GpuMetric metric);

// Receives the nodes and samples attribution produces. Implementations must
// be callable from the activity-processing thread while application threads
// create other contexts.
class ContextSink {
 public:
  virtual ~ContextSink() = default;
  // The child of `parent` with this kind and name, created on first use.
  // Returns 0 when no node can be created (the sample is then dropped).
  virtual ContextId Child(ContextId parent, GpuNodeKind kind,
                          std::string_view name) = 0;
  // The same for a node with a source location (a Python line inside a
  // jitted function, a sampled instruction whose cubin has line
  // information). Sinks that keep no locations name the node only.
  virtual ContextId ChildAt(ContextId parent, GpuNodeKind kind, std::string_view name,
                            std::string_view /*file*/, uint32_t /*line*/) {
    return Child(parent, kind, name);
  }
  // Adds one sample of `metric` to `context`.
  virtual void Add(ContextId context, GpuMetric metric, double value) = 0;

  // Metrics known only at run time (one per stall reason of instruction
  // samples, runtime/cupti/pc_sampling_*): registered by name, idempotent,
  // then added by the id returned. -1: this sink keeps no such metrics.
  virtual int RegisterNamedMetric(std::string_view name, std::string_view unit,
                                  std::string_view description) {
    (void)name, (void)unit, (void)description;
    return -1;
  }
  virtual void AddNamed(ContextId context, int metric, double value) {
    (void)context, (void)metric, (void)value;
  }
};

}  // namespace deepcontext::gpu
