// Sampled thread CPU time: a sampling thread reads, every interval, the CPU
// clock of each registered thread (pthread_getcpuclockid) and charges the CPU
// time used since its last reading to the op that thread is in at that
// moment. Op threads only publish their current op with a relaxed store, so
// an op costs no clock system call, unlike exact per-op CPU time. Values are
// statistical (a tick's CPU goes to the op running at the tick) and CPU time
// outside any op goes to the thread's node.
#pragma once

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

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
  };

  CpuSampler(MetricStore& store, MetricId cpu_time);
  ~CpuSampler();

  // Starts the sampling thread (no-op when running). [any thread]
  void Start(int64_t interval_ns);
  // Takes a last sample of every thread and joins the sampling thread.
  void Stop();
  bool running() const { return running_.load(std::memory_order_acquire); }
  int64_t interval_ns() const { return interval_ns_; }
  // While paused (between trace windows) the CPU threads use is read but
  // charged to nothing. [any thread]
  void SetPaused(bool paused) {
    paused_.store(paused, std::memory_order_relaxed);
  }

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

  MetricStore& store_;
  const MetricId cpu_time_;
  std::mutex mutex_;  // guards threads_, Thread::last_cpu/gone, stop_
  std::vector<std::shared_ptr<Thread>> threads_;
  std::atomic<bool> running_{false};
  std::atomic<bool> paused_{false};
  bool stop_ = false;
  pthread_t sampler_{};
  int64_t interval_ns_ = 1000000;
};

}  // namespace deepcontext::profiler
