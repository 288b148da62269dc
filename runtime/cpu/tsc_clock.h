// A cheaper wall clock for op durations: the CPU's time-stamp counter.
// Reading CLOCK_MONOTONIC through the vDSO costs two to three times an
// rdtsc (a sequence lock, a fence and a scaling on top of it), and an op
// reads the wall clock twice. Durations measured in ticks are converted to
// nanoseconds with a rate calibrated against CLOCK_MONOTONIC once per
// process. The counter is used only where the kernel itself keeps time
// with it (clocksource "tsc": invariant and synchronized across CPUs);
// elsewhere ticks are CLOCK_MONOTONIC nanoseconds.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "runtime/cpu/clocks.h"

namespace deepcontext::cpu {

class TscClock {
 public:
  // The process's clock, calibrated on first use (about 2 ms of spinning
  // where the counter is used). [any thread]
  static const TscClock& Process();

  // A clock on CLOCK_MONOTONIC (ticks are nanoseconds).
  static TscClock Monotonic() { return TscClock(false, 1.0); }
  // A clock on the time-stamp counter, calibrated now over `calibration_ns`;
  // the monotonic clock where there is no such counter.
  static TscClock Calibrated(int64_t calibration_ns);

  int64_t NowTicks() const {
#if defined(__x86_64__)
    if (uses_counter_) return static_cast<int64_t>(__rdtsc());
#endif
    return MonotonicNs();
  }
  // Nanoseconds in a duration of `ticks`.
  int64_t TicksToNs(int64_t ticks) const {
    if (!uses_counter_) return ticks;
    // Rounded to nearest here: std::llround is a call into libm.
    const double ns = static_cast<double>(ticks) * ns_per_tick_;
    return static_cast<int64_t>(ns < 0 ? ns - 0.5 : ns + 0.5);
  }
  bool uses_counter() const { return uses_counter_; }
  double ns_per_tick() const { return ns_per_tick_; }

 private:
  TscClock(bool uses_counter, double ns_per_tick)
      : uses_counter_(uses_counter), ns_per_tick_(ns_per_tick) {}

  bool uses_counter_;
  double ns_per_tick_;
};

// True when the kernel keeps time with the time-stamp counter.
bool KernelClockIsTsc();

}  // namespace deepcontext::cpu
