// Times framework ops: registered as a DLMonitor FRAMEWORK_OP callback, it
// keeps a per-thread stack of open ops and, at each exit, records the op's
// EXCLUSIVE thread CPU time and wall time (its own time minus that of the
// ops nested in it) and one call, on the op's context.
#pragma once

#include <atomic>

#include "deepcontext/dlmonitor.h"
#include "runtime/profiler/metric_store.h"

namespace deepcontext::profiler {

class OpMetrics {
 public:
  explicit OpMetrics(MetricStore& store);

  // The DLMonitor callback; user_data is the OpMetrics. [any thread, no GIL]
  static void OnEvent(const dlmonitor_event_t* event, void* user_data);

  // Drops every thread's open ops (child after fork).
  void ResetAfterFork();

  // Per-op thread CPU time costs two clock syscalls per op, the largest
  // per-op cost the profiler adds; without it ops keep calls and wall
  // time. Applies to ops entered afterwards. [any thread]
  void SetCpuTime(bool on) { cpu_time_on_.store(on, std::memory_order_relaxed); }
  bool cpu_time() const { return cpu_time_on_.load(std::memory_order_relaxed); }

 private:
  void Enter(const dlmonitor_event_t& event);
  void Exit(const dlmonitor_event_t& event);

  MetricStore& store_;
  const MetricId calls_;
  const MetricId cpu_time_;
  const MetricId wall_time_;
  std::atomic<uint64_t> generation_;
  std::atomic<bool> cpu_time_on_{true};
};

}  // namespace deepcontext::profiler
