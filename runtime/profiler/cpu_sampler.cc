#include "runtime/profiler/cpu_sampler.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <new>
#include <set>

#include "runtime/common/all_signals_blocked.h"
#include "runtime/common/thread_name.h"

namespace deepcontext::profiler {
namespace {

int64_t ClockNs(clockid_t clock, bool* ok) {
  timespec ts{};
  *ok = clock_gettime(clock, &ts) == 0;
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// The sampler whose mutex fork must not copy while held (one per process:
// the session's).
CpuSampler* g_fork_guarded = nullptr;
std::mutex* g_fork_mutex = nullptr;

void LockBeforeFork() {
  if (g_fork_mutex != nullptr) g_fork_mutex->lock();
}
void UnlockAfterFork() {
  if (g_fork_mutex != nullptr) g_fork_mutex->unlock();
}

// Samplers not yet destroyed, for thread-exit handlers.
std::mutex& LiveMutex() {
  static std::mutex* mutex = new std::mutex();
  return *mutex;
}
std::set<CpuSampler*>& Live() {
  static auto* live = new std::set<CpuSampler*>();
  return *live;
}

}  // namespace

CpuSampler::CpuSampler(MetricStore& store, MetricId cpu_time, TickHook on_tick)
    : store_(store), cpu_time_(cpu_time), on_tick_(on_tick) {
  {
    std::lock_guard<std::mutex> guard(LiveMutex());
    Live().insert(this);
  }
  if (g_fork_guarded == nullptr) {
    // A fork while the sampling thread holds the mutex would leave it locked
    // forever in the child.
    g_fork_guarded = this;
    g_fork_mutex = &mutex_;
    pthread_atfork(&LockBeforeFork, &UnlockAfterFork, &UnlockAfterFork);
  }
}

CpuSampler::~CpuSampler() {
  {
    std::lock_guard<std::mutex> guard(LiveMutex());
    Live().erase(this);
  }
  Stop();
  if (g_fork_guarded == this) {
    g_fork_mutex = nullptr;
    g_fork_guarded = nullptr;
  }
}

void CpuSampler::Start(int64_t interval_ns) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (phase_.load(std::memory_order_relaxed) != Phase::kIdle) return;
  interval_ns_ = std::max<int64_t>(interval_ns, 10000);
  // Threads registered earlier start counting from now.
  for (auto& thread : threads_) {
    bool ok = false;
    const int64_t now = ClockNs(thread->clock, &ok);
    if (ok) thread->last_cpu = now;
  }
  // Before the thread exists: its first wait reads the phase.
  phase_.store(Phase::kRunning, std::memory_order_release);
  const AllSignalsBlocked blocked;  // the sampling thread starts without them
  if (pthread_create(&sampler_, nullptr, &CpuSampler::Loop, this) != 0) {
    phase_.store(Phase::kIdle, std::memory_order_release);
  }
}

void CpuSampler::Stop() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    // Idle, or another Stop() is joining the thread.
    if (phase_.load(std::memory_order_relaxed) != Phase::kRunning) return;
    phase_.store(Phase::kStopping, std::memory_order_release);
  }
  // A long interval (up to $DEEPCONTEXT_CPU_SAMPLE_US's second) does not
  // hold the stop back.
  wake_.notify_all();
  pthread_join(sampler_, nullptr);
  {
    std::lock_guard<std::mutex> guard(mutex_);
    phase_.store(Phase::kIdle, std::memory_order_release);
  }
  SampleAll();
}

void* CpuSampler::Loop(void* self) {
  NameThisThread("dc-cpu-sampler");
  auto* sampler = static_cast<CpuSampler*>(self);
  const std::chrono::nanoseconds interval(sampler->interval_ns_);
  auto stopping = [sampler] {
    return sampler->phase_.load(std::memory_order_relaxed) == Phase::kStopping;
  };
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(sampler->mutex_);
      if (sampler->wake_.wait_for(lock, interval, stopping)) return nullptr;
    }
    sampler->SampleAll();
    if (sampler->on_tick_.run != nullptr) sampler->on_tick_.run(sampler->on_tick_.arg);
  }
}

void CpuSampler::EnableCounters(std::span<const cpu::CounterEvent> events,
                                cpu::PerfSyscalls& syscalls) {
  std::vector<MetricId> metrics;
  for (const cpu::CounterEvent& event : events) {
    metrics.push_back(store_.Register(std::string(event.metric), "count",
                                      std::string(event.description)));
  }
  std::lock_guard<std::mutex> guard(mutex_);
  if (syscalls_ != nullptr || events.empty()) return;
  counter_events_.assign(events.begin(), events.end());
  counter_metrics_ = std::move(metrics);
  syscalls_ = &syscalls;
  for (auto& thread : threads_) OpenCountersLocked(*thread);
}

void CpuSampler::DisableCounters() {
  std::lock_guard<std::mutex> guard(mutex_);
  syscalls_ = nullptr;
  counter_events_.clear();
  counter_metrics_.clear();
  counted_threads_ = 0;
  counter_failures_ = 0;
  counter_error_.clear();
  for (auto& thread : threads_) {
    thread->counters.reset();
    thread->last_counts.clear();
  }
}

bool CpuSampler::counting() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return syscalls_ != nullptr;
}

uint64_t CpuSampler::counted_threads() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return counted_threads_;
}

uint64_t CpuSampler::counter_failures(std::string* last_error) const {
  std::lock_guard<std::mutex> guard(mutex_);
  if (last_error != nullptr) *last_error = counter_error_;
  return counter_failures_;
}

void CpuSampler::OpenCountersLocked(Thread& thread) {
  if (syscalls_ == nullptr || thread.counters != nullptr) return;
  StatusOr<std::unique_ptr<cpu::ThreadCounters>> counters =
      cpu::ThreadCounters::Open(*syscalls_, counter_events_, thread.tid);
  if (!counters.ok()) {
    ++counter_failures_;
    counter_error_ = counters.status().message();
    return;
  }
  thread.counters = std::move(*counters);
  ++counted_threads_;
  // Counting starts at zero: a first reading now would only cost a call.
  thread.last_counts.assign(counter_events_.size(), 0);
}

std::shared_ptr<CpuSampler::Thread> CpuSampler::RegisterCurrentThread(
    ContextId outside_ops) {
  auto thread = std::make_shared<Thread>();
  thread->outside_ops = outside_ops;
  thread->tid = static_cast<pid_t>(syscall(SYS_gettid));
  if (pthread_getcpuclockid(pthread_self(), &thread->clock) != 0) return nullptr;
  bool ok = false;
  thread->last_cpu = ClockNs(thread->clock, &ok);
  if (!ok) return nullptr;
  std::lock_guard<std::mutex> guard(mutex_);
  OpenCountersLocked(*thread);
  threads_.push_back(thread);
  return thread;
}

void CpuSampler::Unregister(const std::shared_ptr<Thread>& thread) {
  if (thread == nullptr) return;
  std::lock_guard<std::mutex> guard(mutex_);
  if (thread->gone) return;
  if (running()) SampleLocked(*thread);
  thread->gone = true;
  thread->counters.reset();  // the fds, before the thread's id is reused
  std::erase(threads_, thread);
}

void CpuSampler::UnregisterIfAlive(CpuSampler* sampler,
                                   const std::shared_ptr<Thread>& thread) {
  std::lock_guard<std::mutex> guard(LiveMutex());
  if (Live().count(sampler) != 0) sampler->Unregister(thread);
}

void CpuSampler::SampleAll() {
  std::lock_guard<std::mutex> guard(mutex_);
  for (auto& thread : threads_) SampleLocked(*thread);
}

void CpuSampler::SampleLocked(Thread& thread) {
  if (thread.gone) return;
  bool ok = false;
  const int64_t now = ClockNs(thread.clock, &ok);
  if (!ok) return;
  const int64_t used = now - thread.last_cpu;
  thread.last_cpu = now;
  const bool paused = paused_.load(std::memory_order_relaxed);
  ContextId context = thread.current.load(std::memory_order_relaxed);
  if (context == 0) context = thread.outside_ops;
  if (used > 0 && !paused && context != 0) {
    store_.Add(context, cpu_time_, static_cast<double>(used));
  }
  // Counters are read while paused too, so that a pause's counts are not
  // charged to the first tick after it.
  if (thread.counters == nullptr || !thread.counters->Read(&counts_)) return;
  cpu::CountDeltas(counts_, &thread.last_counts, &deltas_);
  if (paused || context == 0) return;
  for (size_t i = 0; i < deltas_.size() && i < counter_metrics_.size(); ++i) {
    if (deltas_[i] > 0) {
      store_.Add(context, counter_metrics_[i], static_cast<double>(deltas_[i]));
    }
  }
}

void CpuSampler::ResetAfterFork() {
  // Only the forking thread exists here; it registers again on its next op.
  // Their counter groups count the parent's threads: closed here.
  for (auto& thread : threads_) {
    thread->gone = true;
    thread->counters.reset();
  }
  threads_.clear();
  // The sampling thread may have waited on it when the process forked.
  new (&wake_) std::condition_variable();
  phase_.store(Phase::kIdle, std::memory_order_release);
}

}  // namespace deepcontext::profiler
