// Times framework ops: registered as a DLMonitor FRAMEWORK_OP callback, it
// keeps a per-thread stack of open ops and, at each exit, records the op's
// EXCLUSIVE thread CPU time and wall time (its own time minus that of the
// ops nested in it) and one call, on the op's context. CPU time may instead
// be sampled, or left out (CpuTimeMode). An op that ends on another thread
// than the one that started it gets its call and wall time, not CPU time.
#pragma once

#include <atomic>

#include "deepcontext/dlmonitor.h"
#include "runtime/common/ended_elsewhere.h"
#include "runtime/cpu/tsc_clock.h"
#include "runtime/profiler/cpu_sampler.h"
#include "runtime/profiler/metric_store.h"
#include "runtime/profiler/op_sample_log.h"

namespace deepcontext::profiler {

struct TimerStack;

class OpMetrics {
 public:
  // `also_on_tick` runs on the CPU sampler's thread after each tick's
  // flush: other work that may wait a tick.
  explicit OpMetrics(MetricStore& store, CpuSampler::TickHook also_on_tick = {});

  // The DLMonitor callback; user_data is the OpMetrics. [any thread, no GIL]
  static void OnEvent(const dlmonitor_event_t* event, void* user_data);

  // Drops every thread's open ops (child after fork).
  void ResetAfterFork();

  // Adds the calls and times of the ops finished so far to the store. Ops
  // leave them in a per-thread log (op_sample_log.h) that the sampling
  // thread drains each tick; call this before reading the store. [any
  // thread]
  void Flush();

  // How ops get CPU time. kExact reads the thread CPU clock at each op's
  // entry and exit: two system calls per op, the largest per-op cost the
  // profiler adds. kSampled charges the CPU a sampling thread sees each
  // interval to the op running then (runtime/profiler/cpu_sampler.h): no
  // system call per op. kOff: ops keep calls and wall time only. Applies to
  // ops entered afterwards. [any thread]
  enum class CpuTimeMode { kOff = 0, kExact = 1, kSampled = 2 };
  void SetCpuTimeMode(CpuTimeMode mode);
  CpuTimeMode cpu_time_mode() const {
    return cpu_time_mode_.load(std::memory_order_relaxed);
  }
  // Stops the sampling thread after a last sample (session stop).
  void StopSampling();
  // Samples every thread now (before a profile is written).
  void SampleNow() { sampler_.SampleAll(); }
  int64_t sampling_interval_ns() const { return sampler_.interval_ns(); }
  // The clock ops' wall times are read from (runtime/cpu/tsc_clock.h).
  const cpu::TscClock& wall_clock() const { return wall_clock_; }
  // Between trace windows: sampled CPU time is not charged (ops are not
  // delivered then either). [any thread]
  void SetPaused(bool paused) { sampler_.SetPaused(paused); }
  // The sampler, to count hardware counters with the CPU time it samples.
  CpuSampler& sampler() { return sampler_; }

 private:
  void Enter(const dlmonitor_event_t& event);
  void Exit(const dlmonitor_event_t& event);
  // A sample the thread's ring could not take: the thread's first, or its
  // ring is full (no sampling thread drains it). Out of the op path.
  [[gnu::noinline, gnu::cold]] void PushSlow(TimerStack& stack, const OpSample& sample);
  // Closes the thread's ops that other threads ended (EndedElsewhere).
  [[gnu::noinline, gnu::cold]] void TakeEndedElsewhere(TimerStack& stack);
  // One sample into the store.
  void Apply(const OpSample& sample);
  static void OnTick(void* self);
  // Starts the sampling thread and registers this thread with it: once per
  // thread, out of the op path. [[gnu::cold]] keeps it out of line.
  [[gnu::noinline, gnu::cold]] void StartSampling(TimerStack& stack, ContextId context);

  // What every op's entry and exit reads of this object comes first, on
  // one cache line: the step's own work between two ops evicts it, and an
  // op then fetches one line of it where it fetched four.
  alignas(64) std::atomic<uint64_t> generation_;
  // Sampled by default: exact per-op clocks cost more than the rest of the
  // profiler's per-op work together (bench/cpu_overhead.py, gpu_overhead.py).
  std::atomic<CpuTimeMode> cpu_time_mode_{CpuTimeMode::kSampled};
  // Bumped after each stop of the sampler. A thread whose ops last saw
  // another epoch checks, out of the op path, that the sampler runs and
  // starts it again; reading sampler_.running() at every op read a line the
  // sampling thread writes at every tick (its condition variable).
  std::atomic<uint64_t> sampling_epoch_{1};
  // Wall time in ticks of the time-stamp counter where the kernel keeps
  // time with it: half the cost of two CLOCK_MONOTONIC reads per op.
  const cpu::TscClock wall_clock_;
  EndedElsewhere ended_elsewhere_;  // its post count first
  MetricStore& store_;
  const MetricId calls_;
  const MetricId cpu_time_;
  const MetricId wall_time_;
  const CpuSampler::TickHook also_on_tick_;
  // Before the sampler, whose thread drains it: destroyed after.
  OpSampleLog log_;
  CpuSampler sampler_;
};

}  // namespace deepcontext::profiler
