// Attributes framework allocator events (DLMonitor MEMORY domain) to calling
// contexts. Two metrics per memory kind (gpu = device >= 0, host = -1):
//
//  <kind>_alloc_bytes      bytes allocated in the context; its sample count
//                          is the number of allocations, max the largest.
//  <kind>_peak_live_bytes  bytes allocated in the context that were still
//                          live when its device's allocated memory peaked.
//                          Additive: a subtree's sum is its share of the
//                          peak and the whole tree's sum is the peak.
//
// A free is matched to its allocation by address, whichever thread frees
// it. Blocks already live when profiling began arrive as PREEXISTING events
// (the adapter's allocator snapshot, under an "[allocated before profiling]"
// node) so that the device peak and its holders add up to the allocator's
// own; a block both reported live and seen allocated is counted once. Frees
// of blocks nobody reported are counted and otherwise ignored.
//
// RESERVED events (the allocator's segments) track the memory it holds from
// the device, cached or handed out: out-of-memory errors are about that.
// They are kept per device, not per context.
//
// Events are accounted for later, in their order, through a queue
// (memory_event_queue.h): on the CPU sampler's thread each tick (Drain),
// before every read below, and on an allocating thread that finds the queue
// full.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>  // reserved_ranges
#include <utility>
#include <vector>

#include "deepcontext/dlmonitor.h"
#include "runtime/common/flat_hash_map.h"
#include "runtime/common/spin_lock.h"
#include "runtime/profiler/live_allocation_table.h"
#include "runtime/profiler/memory_event_queue.h"
#include "runtime/profiler/metric_store.h"

namespace deepcontext::profiler {

class MemoryMetrics {
 public:
  explicit MemoryMetrics(MetricStore& store);

  // The DLMonitor callback; user_data is the MemoryMetrics. Runs inside the
  // framework's allocator (its lock held): queues the event, and takes only
  // this object's lock when the queue is full.
  static void OnEvent(const dlmonitor_event_t* event, void* user_data);

  // One allocation (bytes > 0, attributed to context) or free (bytes < 0;
  // context unused) of `address` on `device` (-1 = host); `flags` are
  // dlmonitor_memory_flag_t bits. Queued. [any thread]
  void Record(int32_t device, uint64_t address, int64_t bytes,
              ContextId context, uint32_t flags = 0);

  // Accounts for the events queued so far; returns how many. [any thread]
  size_t Drain();
  // Drain() as a CpuSampler tick hook; arg is the MemoryMetrics.
  static void DrainOnTick(void* arg) { static_cast<MemoryMetrics*>(arg)->Drain(); }

  // Stores every context's allocated bytes, and its live bytes at its
  // device's peak, into the metric store, replacing the values of an
  // earlier call. Call before reading the store.
  void Publish();

  // Per device: peak and current allocated bytes, allocation and free
  // counts, bytes live before profiling began, reserved bytes (current and
  // peak); frees of blocks allocated before profiling that no snapshot
  // reported.
  std::vector<std::pair<std::string, std::string>> Metadata();

  // Starts the peaks and counts over from now, still tracking the live
  // allocations so that their frees match (deepcontext_reset).
  void ResetPeaks();

  // Around fork(): the forking thread holds the lock through it, so that
  // the child's copy is not held by a thread the child lacks (the
  // sampler's, draining the queue). [pthread_atfork prepare and parent]
  void ForkPrepare() { lock_.lock(); }
  void ForkParent() { lock_.unlock(); }
  // In the forked child, after ForkPrepare: forgets every allocation, peak
  // and queued event, and releases the lock.
  void ForkChild();

 private:
  // A context's live bytes, and what they were when its device last left
  // a peak: `at_peak` holds that value once the entry changed after the
  // peak was left (peak_epoch says which), else `live` still is it.
  // Also the bytes the context allocated since the last ResetPeaks, which
  // Publish hands to the store: an allocation adds them here, under this
  // object's lock, rather than taking the store's lock of the context,
  // whose line the thread that drains finished ops writes too.
  struct ContextLive {
    ContextId context = 0;
    int64_t live = 0;
    int64_t at_peak = 0;
    uint64_t epoch = 0;
    Accumulator allocated;
  };
  struct ContextIdHash {
    size_t operator()(ContextId id) const { return static_cast<size_t>(id); }
  };
  // A live block: its size and its context's entry in its device's
  // live_entries (entries are never erased while blocks live, and stay in
  // place), which a free updates without a lookup. 32 bytes a table slot
  // with its key.
  struct Allocation {
    int64_t bytes = 0;
    ContextLive* live = nullptr;
  };
  struct DeviceState {
    int64_t live = 0;
    int64_t peak = 0;
    uint64_t allocations = 0;
    uint64_t frees = 0;
    // Every context that allocated on the device, in the order of their
    // first allocation; a deque keeps each entry in place as it grows.
    // Leaving a peak used to copy all of them; a forward pass leaves one at
    // almost every free (each op's output raises the peak, its
    // temporaries' frees leave it), and with native frames there are
    // thousands of contexts: it now counts peaks left instead, and an
    // entry keeps its value at the last one when it changes first after it.
    std::deque<ContextLive> live_entries;
    // Each context's entry. Nearly every op allocates under a context of
    // its own: an open-addressing table finds it in one line where a
    // std::unordered_map divided by its bucket count and chased a node.
    FlatHashMap<ContextId, ContextLive*, ContextIdHash> live_by_context;
    // The entry of the context that allocated last: an op allocates its
    // output and temporaries one after another.
    ContextId last_context = 0;
    ContextLive* last_live = nullptr;
    // Peaks left (snapshots taken) so far.
    uint64_t peak_epoch = 0;
    bool at_new_peak = false;
    int64_t live_before_profiling = 0;
    bool reserved_seen = false;
    int64_t reserved = 0;
    int64_t reserved_peak = 0;
    std::unordered_map<uint64_t, int64_t> reserved_ranges;  // address -> bytes
  };
  struct KindMetrics {
    MetricId alloc_bytes;
    MetricId peak_live_bytes;
  };

  const KindMetrics& MetricsFor(int32_t device);
  // The state of `device`, created on first use.
  DeviceState& StateOf(int32_t device);
  void Free(DeviceState& state, const Allocation& allocation);
  // The entry of a context's live bytes, created on first use.
  static ContextLive& LiveOf(DeviceState& state, ContextId context);
  // Adds `bytes` to a context's live bytes, keeping its value at the last
  // peak left.
  static void AddLive(const DeviceState& state, ContextLive& entry, int64_t bytes);
  // Its live bytes when the device's peak was last left.
  static int64_t AtLastPeak(const DeviceState& state, const ContextLive& entry) {
    return entry.epoch == state.peak_epoch ? entry.at_peak : entry.live;
  }
  void RecordReserved(DeviceState& state, uint64_t address, int64_t bytes,
                      bool preexisting);
  // Accounts for one event. [lock_ held]
  void Apply(const MemoryEvent& event);
  size_t DrainLocked();

  MetricStore& store_;
  MemoryEventQueue queue_;
  // Guards everything below, and draining the queue. Held for a few hash
  // probes per event; a futex-based mutex costs more than that work.
  SpinLock lock_;
  LiveAllocationTable<Allocation> allocations_;
  std::map<int32_t, DeviceState> devices_;
  // The device of the last event and its state (map nodes stay in place):
  // a process allocates on one device, mostly.
  int32_t last_device_ = 0;
  DeviceState* last_state_ = nullptr;
  // Indexed by "is host"; registered on first use.
  std::optional<KindMetrics> metrics_[2];
  // (context, metric) pairs holding a published peak value.
  std::vector<std::pair<ContextId, MetricId>> published_;
  uint64_t unmatched_frees_ = 0;
};

}  // namespace deepcontext::profiler
