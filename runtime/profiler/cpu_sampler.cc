#include "runtime/profiler/cpu_sampler.h"

#include <algorithm>
#include <set>

#include "runtime/common/all_signals_blocked.h"

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

CpuSampler::CpuSampler(MetricStore& store, MetricId cpu_time)
    : store_(store), cpu_time_(cpu_time) {
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
  if (running_.load(std::memory_order_acquire)) return;
  interval_ns_ = std::max<int64_t>(interval_ns, 10000);
  stop_ = false;
  // Threads registered earlier start counting from now.
  for (auto& thread : threads_) {
    bool ok = false;
    const int64_t now = ClockNs(thread->clock, &ok);
    if (ok) thread->last_cpu = now;
  }
  const AllSignalsBlocked blocked;  // the sampling thread starts without them
  if (pthread_create(&sampler_, nullptr, &CpuSampler::Loop, this) == 0) {
    running_.store(true, std::memory_order_release);
  }
}

void CpuSampler::Stop() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!running_.load(std::memory_order_acquire)) return;
    stop_ = true;
  }
  pthread_join(sampler_, nullptr);
  running_.store(false, std::memory_order_release);
  SampleAll();
}

void* CpuSampler::Loop(void* self) {
  auto* sampler = static_cast<CpuSampler*>(self);
  const timespec pause{static_cast<time_t>(sampler->interval_ns_ / 1000000000),
                       static_cast<long>(sampler->interval_ns_ % 1000000000)};
  for (;;) {
    nanosleep(&pause, nullptr);
    {
      std::lock_guard<std::mutex> guard(sampler->mutex_);
      if (sampler->stop_) return nullptr;
    }
    sampler->SampleAll();
  }
}

std::shared_ptr<CpuSampler::Thread> CpuSampler::RegisterCurrentThread(
    ContextId outside_ops) {
  auto thread = std::make_shared<Thread>();
  thread->outside_ops = outside_ops;
  if (pthread_getcpuclockid(pthread_self(), &thread->clock) != 0) return nullptr;
  bool ok = false;
  thread->last_cpu = ClockNs(thread->clock, &ok);
  if (!ok) return nullptr;
  std::lock_guard<std::mutex> guard(mutex_);
  threads_.push_back(thread);
  return thread;
}

void CpuSampler::Unregister(const std::shared_ptr<Thread>& thread) {
  if (thread == nullptr) return;
  std::lock_guard<std::mutex> guard(mutex_);
  if (thread->gone) return;
  if (running_.load(std::memory_order_acquire)) SampleLocked(*thread);
  thread->gone = true;
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
  if (used <= 0 || paused_.load(std::memory_order_relaxed)) return;
  ContextId context = thread.current.load(std::memory_order_relaxed);
  if (context == 0) context = thread.outside_ops;
  if (context != 0) store_.Add(context, cpu_time_, static_cast<double>(used));
}

void CpuSampler::ResetAfterFork() {
  // Only the forking thread exists here; it registers again on its next op.
  for (auto& thread : threads_) thread->gone = true;
  threads_.clear();
  stop_ = false;
  running_.store(false, std::memory_order_release);
}

}  // namespace deepcontext::profiler
