// Windowed tracing: instead of tracing the whole run, trace in windows of a
// fixed length, placed at random times so that together they cover a chosen
// fraction of the run. Between windows framework ops and GPU work are not
// intercepted at all, so the per-event costs that no profiler's own code can
// remove (torch's RecordFunction dispatch, CUPTI's per-launch
// instrumentation) are paid inside windows only. The profile then describes
// the traced windows; its metadata says how much of the run they covered.
#pragma once

#include <pthread.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "common/status.h"

namespace deepcontext::profiler {

constexpr int64_t kDefaultTraceWindowNs = 50'000'000;
constexpr int64_t kMinTraceWindowNs = 1'000'000;
constexpr int64_t kMaxTraceWindowNs = 60'000'000'000;
constexpr double kMinTraceFraction = 0.001;

struct TraceWindowOptions {
  // Share of the run to trace, in (0, 1]; 1 traces everything (no windows).
  double fraction = 1.0;
  int64_t window_ns = kDefaultTraceWindowNs;
};

// Ok when the options can be used, otherwise an error saying why not.
Status CheckTraceWindowOptions(const TraceWindowOptions& options);

// The pauses between windows: uniformly random in [0.5, 1.5] times the mean
// that makes the windows cover `fraction` of the time. A random length keeps
// the windows from locking onto a periodic loop (a training step) and always
// seeing the same part of it.
class PauseSchedule {
 public:
  // The mean pause, and the shortest a schedule can draw.
  static int64_t MeanPauseNs(const TraceWindowOptions& options);
  static int64_t ShortestPauseNs(const TraceWindowOptions& options) {
    return MeanPauseNs(options) / 2;
  }

  PauseSchedule(const TraceWindowOptions& options, uint64_t seed);
  int64_t NextPauseNs();
  int64_t mean_pause_ns() const { return mean_pause_ns_; }

 private:
  std::mt19937_64 random_;
  int64_t mean_pause_ns_;
};

// Opens and closes the windows on a thread of its own: `set_tracing(true)`
// when a window opens, `set_tracing(false)` when it closes. Start() picks a
// random phase, so a run shorter than a window and its pause may be traced
// for all, some or none of its time.
class TraceWindows {
 public:
  using Switch = std::function<void(bool tracing)>;

  struct Stats {
    uint64_t windows = 0;       // opened so far
    int64_t traced_ns = 0;      // time inside windows, the open one included
    int64_t elapsed_ns = 0;     // since Start() or ResetStats()
    int64_t max_switch_ns = 0;  // the slowest set_tracing call
  };

  TraceWindows() = default;
  TraceWindows(const TraceWindows&) = delete;
  TraceWindows& operator=(const TraceWindows&) = delete;
  ~TraceWindows() { Stop(); }

  // Starts the thread, inside a window or inside a pause (then it calls
  // set_tracing(false) first). Fails only if no thread can be created.
  // `set_tracing` must not call Stop().
  Status Start(const TraceWindowOptions& options, Switch set_tracing, uint64_t seed);
  // Ends the windows and leaves tracing on, as it was before Start().
  void Stop();
  bool running() const;
  Stats stats() const;
  // Counts from now (a profiled region restarted the session's clock).
  void ResetStats();
  // In a forked child the thread does not exist: forget it, and turn
  // tracing back on through the switch.
  void ResetAfterFork();

  // Held around every call of a switch. A fork waits for a switch in
  // progress (LockSwitchesBeforeFork / UnlockSwitchesAfterFork are
  // pthread_atfork handlers; register them before any child handler that
  // switches), so a child never inherits a lock the switch held, e.g. in
  // torch's callback registry. Whoever installs a switch takes it too.
  static std::mutex& SwitchMutex();
  static void LockSwitchesBeforeFork();
  static void UnlockSwitchesAfterFork();

 private:
  static void* Loop(void* self);
  void SetTracing(bool on);  // calls the switch, updates the stats
  void CallSwitch(bool on);  // the switch, under SwitchMutex()
  // Time the open window has counted until `now` (0 if none is open);
  // caller holds mutex_.
  int64_t OpenWindowNs(int64_t now) const;

  // kRunning from Start() until Stop() asks the thread to end (kStopping),
  // kIdle again once it has joined it.
  enum class Phase { kIdle, kRunning, kStopping };

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_;
  Phase phase_ = Phase::kIdle;
  bool open_ = false;  // inside a window, not a pause
  pthread_t thread_{};
  TraceWindowOptions options_;
  Switch set_tracing_;
  std::unique_ptr<PauseSchedule> schedule_;
  Stats stats_;
  int64_t opened_at_ns_ = 0;  // of the open window
  int64_t first_wait_ns_ = 0;  // until the first switch
  int64_t counted_from_ns_ = 0;
  int64_t stopped_at_ns_ = 0;  // elapsed_ns ends here once stopped
};

}  // namespace deepcontext::profiler
