// Attributes GPU activity (kernels, copies, memsets, synchronizations) to
// the calling context that launched it, aggregating online:
//
//   launch context -> [GPU API, e.g. "cuLaunchKernel"] -> [kernel name]
//
// Launches are reported from the launching threads at API entry; activity
// records arrive later, in batches, on the activity-processing thread, and
// are joined to their launch by the vendor's correlation id. Kernels that
// run as nodes of a CUDA graph are attributed to the context in which the
// graph node was created (e.g. during stream capture), when known, because
// that is the code that defined the work; the replaying call is only a
// trigger.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/gpu/context_sink.h"
#include "runtime/gpu/correlation_table.h"
#include "runtime/gpu/gpu_records.h"
#include "runtime/gpu/interval_union.h"
#include "runtime/gpu/occupancy.h"

namespace deepcontext::gpu {

struct AttributionOptions {
  // Parent of the "<unattributed>" node (DLMonitor's root context is 1).
  ContextId root_context = 1;
  // Bound on remembered launches (see CorrelationTable).
  size_t max_launches = size_t{1} << 20;
  // Bound on records waiting for a launch; beyond it records are credited
  // to "<unattributed>" at once.
  size_t max_parked_records = size_t{1} << 16;
  // Reordering window of the per-device busy-time union.
  size_t busy_window = 4096;
};

// Counters, for the profile's metadata and for tests.
struct AttributionStats {
  uint64_t launches = 0;
  uint64_t records = 0;
  uint64_t attributed = 0;         // credited to a launch or graph node
  uint64_t late = 0;               // of those, arrived before their launch
  uint64_t via_graph_node = 0;     // of those, credited to a graph node's context
  uint64_t unattributed = 0;       // credited to "<unattributed>"
  // Records without a launch while tracing in windows: work launched while
  // tracing was switched; left out of the profile.
  uint64_t outside_windows = 0;
  uint64_t parked = 0;             // currently waiting for a launch
  uint64_t evicted_launches = 0;   // launches dropped by the table bound
  uint64_t tracked = 0;            // correlation ids currently remembered
  uint64_t dropped = 0;            // the sink could not create a node
  // Kernel records without a duration (CUPTI writes 0 for start and end
  // when it could not time the launch, as for launches its range profiler
  // replays; a forced flush may hand over a running kernel without an
  // end): credited with kUntimedLaunches instead of a gpu_time of 0.
  uint64_t untimed_kernels = 0;
  // Launches that waited through a whole vendor flush without any record
  // arriving for them or for any later launch: the records went elsewhere
  // (see Flush()).
  uint64_t launches_without_records = 0;
};

// Kernel activity of one device, for metadata and idle-time analysis.
struct DeviceActivity {
  uint32_t device = 0;
  uint64_t busy_ns = 0;  // union of kernel intervals
  uint64_t first_start_ns = 0;
  uint64_t last_end_ns = 0;
  uint64_t kernels = 0;
};

// The names a graph kernel resolver gets for memsets and copies.
inline constexpr std::string_view kGraphMemsetName = "<memset>";
inline constexpr std::string_view kGraphMemcpyName = "<memcpy>";

class GpuAttribution {
 public:
  // `sink` must outlive this object.
  explicit GpuAttribution(ContextSink& sink, AttributionOptions options = {});
  GpuAttribution(const GpuAttribution&) = delete;
  GpuAttribution& operator=(const GpuAttribution&) = delete;

  // Device limits used for occupancy; kernels of devices without info get
  // no occupancy metric. [any thread]
  void SetDeviceInfo(uint32_t device, const DeviceInfo& info);

  // A GPU API call that will produce activity records. [any thread; cheap:
  // one in-place insert into a shard's ring]
  void OnLaunch(const LaunchRecord& launch);
  // A launch that will produce no records, because its work was captured
  // into a graph instead of run or the call failed: forgets it now instead
  // of keeping it until it is evicted. [any thread]
  void ForgetLaunch(uint64_t correlation_id);
  // A graph node was created while `context` was current, inside the API
  // `api_name` (e.g. "cuLaunchKernel" during stream capture). [any thread]
  void OnGraphNodeCreated(uint64_t graph_node_id, ContextId context,
                          std::string_view api_name);
  // A graph node was cloned (graph instantiation): the clone inherits the
  // original's context. [any thread]
  void OnGraphNodeCloned(uint64_t clone_id, uint64_t original_id);
  // Asked for a graph kernel, memset or copy whose node was never seen
  // created or cloned (e.g. one of a child graph that an executable graph
  // embeds), by kernel name or kGraphMemsetName / kGraphMemcpyName: the
  // context to credit instead of the graph launch's, or 0. Set before
  // records arrive; runs on the processing thread.
  using GraphKernelResolver = std::function<ContextId(
      uint64_t correlation_id, uint64_t graph_node_id, std::string_view kernel_name)>;
  void SetGraphKernelResolver(GraphKernelResolver resolver) {
    resolver_ = std::move(resolver);
  }

  // Asked for each record of a graph node whose context and launch are both
  // known: where to credit it, given the context the node was created in
  // and the launching call's context; returning `node_context` keeps it
  // there. (An XLA command buffer is recorded by one call and launched by
  // later ones, from wherever the program calls the jitted function.) Set
  // before records arrive; runs on the processing thread.
  using GraphNodePlacer =
      std::function<ContextId(ContextId node_context, ContextId launch_context)>;
  void SetGraphNodePlacer(GraphNodePlacer placer) { placer_ = std::move(placer); }

  // Activity records. Calls are serialized internally; in production they
  // come from the one activity-processing thread.
  void OnKernel(const KernelRecord& record);
  void OnMemcpy(const MemcpyRecord& record);
  void OnMemset(const MemsetRecord& record);
  void OnSync(const SyncRecord& record);

  // Credits records whose launch arrived after them. Also done at the
  // start of every On<Record>() call and by Flush().
  void ProcessLate();
  // Call right before asking the vendor to flush its buffers (forced, so
  // that records of unfinished work are handed over too). Launches made
  // before it must then have records, complete or not. [any thread]
  void BeginFlush();
  // Credits every waiting record (to "<unattributed>" if its launch never
  // arrived) and forgets finished and open-ended (graph) launches. Call
  // after the vendor's buffers have been flushed.
  //
  // Also counts, in launches_without_records, the launches that expect
  // records, were made before the last BeginFlush(), and for which neither
  // they nor any later launch got a single record: after a forced flush that
  // only happens when another client took the activity buffers or turned
  // the activity kinds off. Synchronizations are not counted (their record
  // comes when the call returns); failed and captured calls are forgotten
  // by the backend. Without BeginFlush() nothing is counted.
  void Flush();

  // Tracing is switched on and off (trace windows): a record whose launch
  // never arrives belongs to work launched while tracing was being switched,
  // not to a launch path the backend misses, so it is counted in
  // outside_windows and credited nowhere. [any thread]
  void SetWindowed(bool windowed) {
    windowed_.store(windowed, std::memory_order_relaxed);
  }

  AttributionStats Stats() const;
  // One entry per device that ran kernels, ordered by device.
  std::vector<DeviceActivity> Devices() const;

 private:
  struct GraphNode {
    ContextId context;
    std::string api_name;
  };
  // Where a record is credited: `context` is the launch context (0 =
  // unattributed) and `api` the API node name below it.
  struct Target {
    ContextId context = 0;
    std::string_view api;
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>()(s);
    }
  };
  using ChildMap =
      std::unordered_map<std::string, ContextId, StringHash, std::equal_to<>>;

  // Handles one record of any type; caller holds processing_mutex_.
  template <typename Record>
  void Handle(const Record& record, uint64_t graph_node_id);
  void CreditPending(const LaunchInfo* launch,
                     std::vector<PendingRecord>& records, bool late);
  void ProcessLateLocked();

  // The API node below `target`, or "<unattributed>" for context 0.
  ContextId ApiNode(const Target& target);
  // Cached sink.Child(); memory grows with the number of distinct nodes.
  ContextId Child(ContextId parent, GpuNodeKind kind, std::string_view name);
  void Credit(const Target& target, const KernelRecord& record);
  void Credit(const Target& target, const MemcpyRecord& record);
  void Credit(const Target& target, const MemsetRecord& record);
  void Credit(const Target& target, const SyncRecord& record);
  void Add(ContextId context, GpuMetric metric, double value) {
    sink_.Add(context, metric, value);
  }

  ContextSink& sink_;
  const AttributionOptions options_;
  GraphKernelResolver resolver_;
  GraphNodePlacer placer_;
  CorrelationTable table_;
  std::atomic<uint64_t> launches_{0};
  std::atomic<bool> windowed_{false};
  // Incremented by BeginFlush(); launches carry the value at their entry.
  std::atomic<uint32_t> epoch_{0};

  mutable std::mutex graph_mutex_;  // guards graph_nodes_
  std::unordered_map<uint64_t, GraphNode> graph_nodes_;

  mutable std::mutex device_mutex_;  // guards devices_
  std::unordered_map<uint32_t, DeviceInfo> devices_;

  // Everything below is touched only with processing_mutex_ held.
  mutable std::mutex processing_mutex_;
  // (parent * 16 + kind) -> name -> child; context ids stay far below 2^60.
  std::unordered_map<uint64_t, ChildMap> children_;
  std::unordered_map<uint32_t, IntervalUnion> busy_;
  AttributionStats stats_;
  uint64_t newest_record_ = 0;  // highest correlation id of any record
};

// "memcpy HtoD (pageable)", "memcpy DtoD", ...: the node name of a copy.
std::string MemcpyNodeName(const MemcpyRecord& record);
// "sync: stream", "sync: event", ...: the node name of a synchronization.
std::string SyncNodeName(const SyncRecord& record);

}  // namespace deepcontext::gpu
