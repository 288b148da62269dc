#include "runtime/profiler/trace_windows.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <new>

#include "runtime/common/all_signals_blocked.h"
#include "runtime/common/thread_name.h"
#include "runtime/cpu/clocks.h"

namespace deepcontext::profiler {

Status CheckTraceWindowOptions(const TraceWindowOptions& options) {
  if (!(options.fraction >= kMinTraceFraction && options.fraction <= 1.0)) {
    char text[160];
    std::snprintf(text, sizeof(text),
                  "the traced fraction must be between %g and 1 (got %g)",
                  kMinTraceFraction, options.fraction);
    return Status::Error(text);
  }
  if (options.window_ns < kMinTraceWindowNs ||
      options.window_ns > kMaxTraceWindowNs) {
    return Status::Error("a trace window must last from " +
                         std::to_string(kMinTraceWindowNs / 1000000) + " ms to " +
                         std::to_string(kMaxTraceWindowNs / 1000000) + " ms (got " +
                         std::to_string(options.window_ns / 1000000) + " ms)");
  }
  return Status::Ok();
}

std::mutex& TraceWindows::SwitchMutex() {
  static auto* mutex = new std::mutex();  // never destroyed: used at exit
  return *mutex;
}

void TraceWindows::LockSwitchesBeforeFork() { SwitchMutex().lock(); }
void TraceWindows::UnlockSwitchesAfterFork() { SwitchMutex().unlock(); }

void TraceWindows::CallSwitch(bool on) {
  std::lock_guard<std::mutex> guard(SwitchMutex());
  set_tracing_(on);
}

int64_t PauseSchedule::MeanPauseNs(const TraceWindowOptions& options) {
  return static_cast<int64_t>(
      static_cast<double>(options.window_ns) *
      (1.0 / std::clamp(options.fraction, kMinTraceFraction, 1.0) - 1.0));
}

PauseSchedule::PauseSchedule(const TraceWindowOptions& options, uint64_t seed)
    : random_(seed), mean_pause_ns_(MeanPauseNs(options)) {}

int64_t PauseSchedule::NextPauseNs() {
  std::uniform_real_distribution<double> factor(0.5, 1.5);
  return static_cast<int64_t>(factor(random_) *
                              static_cast<double>(mean_pause_ns_));
}

Status TraceWindows::Start(const TraceWindowOptions& options, Switch set_tracing,
                           uint64_t seed) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (phase_ != Phase::kIdle) return Status::Error("trace windows are already running");
  options_ = options;
  set_tracing_ = std::move(set_tracing);
  schedule_ = std::make_unique<PauseSchedule>(options, seed);
  stats_ = Stats{};
  counted_from_ns_ = cpu::MonotonicNs();
  stopped_at_ns_ = 0;
  // A random phase: the run starts inside a window with probability
  // `fraction`, otherwise inside a pause, and that first stretch is cut at a
  // random point, so a region of any length is traced `fraction` of the
  // time on average.
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::mt19937_64 phase(seed ^ 0x9e3779b97f4a7c15ull);
  open_ = uniform(phase) < options.fraction;
  first_wait_ns_ = static_cast<int64_t>(
      uniform(phase) * static_cast<double>(open_ ? options.window_ns
                                                 : schedule_->NextPauseNs()));
  if (open_) {
    stats_.windows = 1;
    opened_at_ns_ = counted_from_ns_;
  } else {
    lock.unlock();
    CallSwitch(false);
    lock.lock();
  }
  int error;
  {
    const AllSignalsBlocked blocked;  // the window thread starts without them
    error = pthread_create(&thread_, nullptr, &TraceWindows::Loop, this);
  }
  if (error != 0) {
    if (!open_) {
      lock.unlock();
      CallSwitch(true);
    }
    return Status::Error("cannot start the trace-window thread");
  }
  phase_ = Phase::kRunning;
  return Status::Ok();
}

void* TraceWindows::Loop(void* self) {
  NameThisThread("dc-trace-window");
  auto* windows = static_cast<TraceWindows*>(self);
  std::unique_lock<std::mutex> lock(windows->mutex_);
  auto stopping = [windows] { return windows->phase_ == Phase::kStopping; };
  int64_t wait = windows->first_wait_ns_;
  for (;;) {
    windows->wake_.wait_for(lock, std::chrono::nanoseconds(wait), stopping);
    // Stopped inside a pause: Stop() turns tracing back on.
    if (stopping()) return nullptr;
    const bool open = !windows->open_;
    lock.unlock();
    windows->SetTracing(open);
    lock.lock();
    wait = open ? windows->options_.window_ns : windows->schedule_->NextPauseNs();
  }
}

void TraceWindows::SetTracing(bool on) {
  const int64_t before = cpu::MonotonicNs();
  CallSwitch(on);
  const int64_t after = cpu::MonotonicNs();
  std::lock_guard<std::mutex> guard(mutex_);
  stats_.max_switch_ns = std::max(stats_.max_switch_ns, after - before);
  if (on) {
    ++stats_.windows;
    opened_at_ns_ = after;
  } else {
    stats_.traced_ns += OpenWindowNs(before);
  }
  open_ = on;
}

int64_t TraceWindows::OpenWindowNs(int64_t now) const {
  return open_ ? now - std::max(opened_at_ns_, counted_from_ns_) : 0;
}

void TraceWindows::Stop() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (phase_ != Phase::kRunning) return;
    phase_ = Phase::kStopping;
  }
  wake_.notify_all();
  pthread_join(thread_, nullptr);
  bool was_open;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    phase_ = Phase::kIdle;
    was_open = open_;
    const int64_t now = cpu::MonotonicNs();
    stats_.traced_ns += OpenWindowNs(now);
    stopped_at_ns_ = now;
    open_ = false;
  }
  if (!was_open) CallSwitch(true);
}

bool TraceWindows::running() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return phase_ != Phase::kIdle;
}

TraceWindows::Stats TraceWindows::stats() const {
  std::lock_guard<std::mutex> guard(mutex_);
  Stats out = stats_;
  const int64_t now = phase_ != Phase::kIdle ? cpu::MonotonicNs() : stopped_at_ns_;
  out.traced_ns += OpenWindowNs(now);
  out.elapsed_ns = std::max<int64_t>(0, now - counted_from_ns_);
  return out;
}

void TraceWindows::ResetStats() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (phase_ == Phase::kIdle) return;
  stats_.windows = open_ ? 1 : 0;
  stats_.traced_ns = 0;
  stats_.max_switch_ns = 0;
  counted_from_ns_ = cpu::MonotonicNs();
}

void TraceWindows::ResetAfterFork() {
  // Only the forking thread exists in the child; the window thread may have
  // held the mutex when the process forked.
  new (&mutex_) std::mutex();
  new (&wake_) std::condition_variable();
  if (phase_ == Phase::kIdle) return;
  phase_ = Phase::kIdle;
  stopped_at_ns_ = cpu::MonotonicNs();
  if (!open_) CallSwitch(true);
  open_ = false;
}

}  // namespace deepcontext::profiler
