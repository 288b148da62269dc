// A cheaper wall clock for op durations: the CPU's time-stamp counter.
// Reading CLOCK_MONOTONIC through the vDSO costs two to three times an
// rdtsc (a sequence lock, a fence and a scaling on top of it; in a virtual
// machine whose kernel keeps time with a paravirtual clock, more), and an
// op reads the wall clock twice. Durations measured in ticks are converted
// to nanoseconds with a rate calibrated against CLOCK_MONOTONIC once per
// process. The counter is used only where the kernel vouches for it
// (CounterUsable); elsewhere ticks are CLOCK_MONOTONIC nanoseconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "runtime/cpu/clocks.h"

namespace deepcontext::cpu {

class TscClock {
 public:
  // The process's clock, calibrated on first use (about 2 ms of spinning
  // where the counter is used); DEEPCONTEXT_OP_CLOCK (ForcedOpClock) can
  // force either. [any thread]
  static const TscClock& Process();

  // A clock on CLOCK_MONOTONIC (ticks are nanoseconds).
  static TscClock Monotonic() { return TscClock(false, 1.0); }
  // With `use_counter`, a clock on the time-stamp counter, calibrated now
  // over `calibration_ns`; the monotonic clock otherwise, and where there is
  // no counter to read (not x86-64).
  static TscClock Calibrated(int64_t calibration_ns, bool use_counter);

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

// What the kernel says about the time-stamp counter: the contents of
// /sys/devices/system/clocksource/clocksource0/{current,available}_clocksource
// and the flags of /proc/cpuinfo.
struct CounterEvidence {
  std::string_view current_clocksource;
  std::string_view available_clocksources;
  std::string_view cpu_flags;
};

// True when the kernel keeps time with the counter ("tsc": invariant and
// synchronized across CPUs), or lists it as a clocksource it checked and
// would use on a CPU whose counter is invariant (constant_tsc and
// nonstop_tsc): a virtual machine whose kernel rated its paravirtual clock
// higher (kvm-clock, the default of AWS's Nitro instances) has such a
// counter. A kernel that found the counter unstable (or was told so,
// tsc=unstable) no longer lists it, once its timers run in one-shot mode
// (high-resolution or tickless timers, as in every distribution's kernel).
bool CounterUsable(const CounterEvidence& evidence);

// CounterUsable for this machine, read from /sys and /proc (x86-64 only:
// elsewhere "tsc" can only be an x86 host's /sys seen by an emulated
// process, whose counter it cannot read).
bool CounterUsableHere();

// DEEPCONTEXT_OP_CLOCK: "counter" (true) or "monotonic" (false) forces one
// clock, to compare them on a machine; anything else (nullopt) leaves the
// choice to CounterUsableHere.
std::optional<bool> ForcedOpClock(const char* value);

}  // namespace deepcontext::cpu
