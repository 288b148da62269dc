// CUPTI detached from the process between trace windows. Attached but
// paused, CUPTI still costs every launch about 1.1 us on the H200
// (bench/gpu_launch_cost, row "both, activity paused" against "none"): about
// 0.05x of a launch-bound training step, paid for the whole run. Detached,
// launches between windows cost what they cost without a profiler.
//
// CUPTI may only be detached (cuptiFinalize) where no other thread is inside
// it; NVIDIA's advice, which Kineto follows, is the exit of a CUDA call's
// callback; there CUPTI also waits for the work in flight and hands over
// its last records. So the thread that pauses tracing asks, once every
// callback and activity kind is off and the completed records are in, and
// the exit callback of the next traced call, on whichever application
// thread makes it, detaches. The next window attaches CUPTI again.
// WindowDetach is the handshake between those threads; it knows nothing of
// CUPTI itself (the detach is a function the backend passes), so any
// backend whose tracing library must be detached from an application
// thread can use it. The facts above are CUPTI's, the one backend that
// detaches today (runtime/cupti/window_pause.cc).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace deepcontext::gpu {

// Pauses shorter than this keep CUPTI attached. On the H200 a detach cost
// the application thread whose CUDA call made it about 1.7 ms, and
// attaching again about 10 ms on the profiler's thread, against about
// 1.1 us per launch for staying attached: a launch-bound program, with tens
// of thousands of launches a second, gains from pauses of a few tens of
// milliseconds on; shorter pauses would mostly pay for the switch.
constexpr int64_t kMinDetachedPauseNs = 20'000'000;

class WindowDetach {
 public:
  enum class State {
    kAttached,   // tracing, or paused with CUPTI attached
    kAsked,      // paused and quiet: the next traced call's exit detaches
    kDetaching,  // an application thread is detaching
    kDetached,   // no CUPTI call may be made until it is attached again
    kQuiet,      // attached, callbacks trace nothing: a switch is under way
  };
  enum class Resumed {
    kStillAttached,  // no call came to detach: the ask was called off
    kDetached,       // detached: attach CUPTI again
    kStuck,          // a detach under way did not finish in time
  };
  struct Stats {
    uint64_t detaches = 0;
    int64_t detach_max_ns = 0;  // spent inside an application's CUDA call
    int64_t detach_total_ns = 0;
    uint64_t called_off = 0;  // pauses that ended before any call detached
    uint64_t attaches = 0;
    int64_t attach_max_ns = 0;
    int64_t attach_total_ns = 0;
  };

  // [pausing thread] Callbacks trace nothing from now on, while the
  // pausing thread prepares CUPTI for a detach.
  void Quiet();
  // [pausing thread] CUPTI is ready and the pausing thread makes no more
  // CUPTI calls: the next OnApiExit detaches.
  void Ask();
  // [callbacks] Whether callbacks trace: only while attached and not
  // paused by Ask().
  bool tracing() const {
    return state_.load(std::memory_order_acquire) == State::kAttached;
  }
  State state() const { return state_.load(std::memory_order_acquire); }
  // [application thread, at the exit of a traced call while not tracing]
  // Detaches with `finalize` when asked to and no other thread does;
  // true when this call did.
  bool OnApiExit(const std::function<void()>& finalize);
  // [pausing thread] Ends a pause that may have detached: calls off an ask
  // no call has taken up yet, or waits up to `timeout` for a detach under
  // way. The state is then kQuiet (kStillAttached) or kDetached.
  Resumed EndPause(std::chrono::nanoseconds timeout);
  // [pausing thread] CUPTI is attached again (after kDetached), or was
  // never detached (after kStillAttached): callbacks trace again.
  void Attached();
  // [pausing thread] Time spent attaching CUPTI again.
  void RecordAttach(int64_t ns);
  Stats stats() const;

 private:
  std::atomic<State> state_{State::kAttached};
  std::atomic<uint64_t> detaches_{0};
  std::atomic<int64_t> detach_max_ns_{0};
  std::atomic<int64_t> detach_total_ns_{0};
  uint64_t called_off_ = 0;  // pausing thread only, like the attach stats
  uint64_t attaches_ = 0;
  int64_t attach_max_ns_ = 0;
  int64_t attach_total_ns_ = 0;
};

// The profile's metadata on detaching between windows: how often, how long
// an application thread spent detaching and the pausing thread attaching,
// and `error` (why tracing the GPU ended early) when not empty.
std::vector<std::pair<std::string, std::string>> WindowDetachMetadata(
    const WindowDetach::Stats& stats, const std::string& error);

}  // namespace deepcontext::gpu
