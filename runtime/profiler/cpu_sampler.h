// Sampled thread CPU time: a sampling thread reads, every interval, the CPU
// clock of each registered thread (pthread_getcpuclockid) and charges the CPU
// time used since its last reading to the op that thread is in at that
// moment. Op threads only publish their current op with a relaxed store, so
// an op costs no clock system call, unlike exact per-op CPU time. Values are
// statistical (a tick's CPU goes to the op running at the tick) and CPU time
// outside any op goes to the thread's node. With counters enabled
// (EnableCounters, `deepcontext run --cpu-counters`) each tick also reads the
// thread's hardware counters (runtime/cpu/perf_counters.h) and charges their
// increase the same way.
#pragma once

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "runtime/cpu/perf_counters.h"

#include "runtime/profiler/metric_store.h"

namespace deepcontext::profiler {

class CpuSampler {
 public:
  // A registered thread. Its owner publishes the current op's context.
  struct Thread {
    clockid_t clock{};
    std::atomic<ContextId> current{0};
    ContextId outside_ops = 0;  // where CPU outside any op goes
    int64_t last_cpu = 0;       // guarded by the sampler's mutex
    bool gone = false;          // guarded by the sampler's mutex
    pid_t tid = 0;
    // With counters: the thread's group and its last reading (guarded by
    // the sampler's mutex).
    std::unique_ptr<cpu::ThreadCounters> counters;
    std::vector<uint64_t> last_counts;
  };

  // Run on the sampling thread after each tick's samples: work that may
  // wait a tick and should not be done on the threads that run ops. No
  // member initializers, so that `{}` (none) can be a default argument
  // inside this class; run is null there.
  struct TickHook {
    void (*run)(void* arg);
    void* arg;
  };
  CpuSampler(MetricStore& store, MetricId cpu_time, TickHook on_tick = {});
  ~CpuSampler();

  // Starts the sampling thread (no-op while it exists, stopping or not).
  // [any thread]
  void Start(int64_t interval_ns);
  // Wakes the sampling thread, joins it and takes a last sample of every
  // thread. A second Stop() while the first joins returns at once. [any
  // thread but the sampling thread]
  void Stop();
  // True from Start() until Stop() has joined the sampling thread.
  bool running() const {
    return phase_.load(std::memory_order_acquire) != Phase::kIdle;
  }
  int64_t interval_ns() const { return interval_ns_; }
  // While paused (between trace windows) the CPU threads use is read but
  // charged to nothing. [any thread]
  void SetPaused(bool paused) {
    paused_.store(paused, std::memory_order_relaxed);
  }

  // From now on, also counts `events` per registered thread (those
  // registered before included) and charges them as metrics named after the
  // events. `syscalls` must outlive the sampler. Threads whose group cannot
  // be opened count CPU time only (counter_failures()). [any thread]
  void EnableCounters(std::span<const cpu::CounterEvent> events,
                      cpu::PerfSyscalls& syscalls);
  // Stops counting and closes every thread's group (a later session that
  // did not ask for counters). [any thread]
  void DisableCounters();
  bool counting() const;
  // Threads counted so far, and those whose counters could not be opened
  // (with the last reason).
  uint64_t counted_threads() const;
  uint64_t counter_failures(std::string* last_error) const;

  // Registers the calling thread; CPU it used before this call is not
  // counted. `outside_ops` receives CPU time while no op is current.
  std::shared_ptr<Thread> RegisterCurrentThread(ContextId outside_ops);
  // Final sample of a thread that is exiting (called on that thread).
  void Unregister(const std::shared_ptr<Thread>& thread);
  // The same for code that may outlive `sampler` (thread-exit handlers):
  // does nothing once that sampler is destroyed.
  static void UnregisterIfAlive(CpuSampler* sampler,
                                const std::shared_ptr<Thread>& thread);

  // One sampling pass over all threads (the sampling thread, a profile
  // write, tests).
  void SampleAll();

  // In a forked child: the sampling thread and the parent's other threads do
  // not exist; forget them without joining. Start() works again afterwards.
  void ResetAfterFork();

 private:
  static void* Loop(void* self);
  void SampleLocked(Thread& thread);
  void OpenCountersLocked(Thread& thread);

  MetricStore& store_;
  const MetricId cpu_time_;
  const TickHook on_tick_;
  // kRunning from Start() until Stop() asks the thread to end (kStopping),
  // kIdle again once it has joined it. Changed under mutex_; atomic because
  // ops read running() without it.
  enum class Phase { kIdle, kRunning, kStopping };

  mutable std::mutex mutex_;  // guards threads_, Thread fields, phase_
                              // changes and the counter members below
  std::condition_variable wake_;  // Stop() ends the sampling thread's wait
  std::vector<std::shared_ptr<Thread>> threads_;
  std::atomic<Phase> phase_{Phase::kIdle};
  std::atomic<bool> paused_{false};
  pthread_t sampler_{};
  int64_t interval_ns_ = 1000000;
  std::vector<cpu::CounterEvent> counter_events_;
  std::vector<MetricId> counter_metrics_;
  cpu::PerfSyscalls* syscalls_ = nullptr;
  uint64_t counted_threads_ = 0;
  uint64_t counter_failures_ = 0;
  std::string counter_error_;
  std::vector<uint64_t> counts_, deltas_;  // scratch of SampleLocked
};

}  // namespace deepcontext::profiler
