// A cheaper wall clock for op durations: the CPU's counter, the
// time-stamp counter on x86-64 (rdtsc) and the generic timer's virtual
// counter on AArch64 (CNTVCT_EL0). Reading CLOCK_MONOTONIC through the
// vDSO costs two to three times an rdtsc (a sequence lock, a fence and a
// scaling on top of it; in a virtual machine whose kernel keeps time with
// a paravirtual clock, more; on AArch64 an instruction barrier before the
// same counter read), and an op reads the wall clock twice. Durations
// measured in ticks are converted to nanoseconds with a rate calibrated
// against CLOCK_MONOTONIC once per process. The counter is used only where
// the kernel vouches for it (CounterUsable, ArchCounterUsable); elsewhere
// ticks are CLOCK_MONOTONIC nanoseconds.
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
  // With `use_counter`, a clock on the counter, calibrated now over
  // `calibration_ns`; the monotonic clock otherwise, and where there is no
  // counter to read (neither x86-64 nor AArch64).
  static TscClock Calibrated(int64_t calibration_ns, bool use_counter);

  // The counter's name, for profile metadata.
  static constexpr const char* kCounterName =
#if defined(__aarch64__)
      "virtual counter (CNTVCT_EL0)";
#else
      "time-stamp counter";
#endif

  // Whether this build has a counter to read.
  static constexpr bool kHasCounter =
#if defined(__x86_64__) || defined(__aarch64__)
      true;
#else
      false;
#endif

  int64_t NowTicks() const {
    if (kHasCounter && uses_counter_) return static_cast<int64_t>(ReadCounter());
    return MonotonicNs();
  }

  // The counter itself (0 where there is none). Not ordered with the loads
  // and stores around it, like CLOCK_MONOTONIC's own read on x86-64: op
  // times are microseconds, and a fence would cost what the counter saves.
  static uint64_t ReadCounter() {
#if defined(__x86_64__)
    return __rdtsc();
#elif defined(__aarch64__)
    uint64_t ticks;
    asm volatile("mrs %0, cntvct_el0" : "=r"(ticks));
    return ticks;
#else
    return 0;
#endif
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

// AArch64's counterpart: the kernel keeps time with the generic timer
// ("arch_sys_counter"), and so lets user space read its virtual counter
// (the vDSO reads it then). Kernels that must work around a counter erratum
// trap those reads or keep time with another clocksource.
bool ArchCounterUsable(std::string_view current_clocksource);

// CounterUsable (x86-64) or ArchCounterUsable (AArch64) for this machine,
// read from /sys and /proc. Elsewhere false; so is the other ISA's name,
// which can only be the host's /sys seen by an emulated process.
bool CounterUsableHere();

// DEEPCONTEXT_OP_CLOCK: "counter" (true) or "monotonic" (false) forces one
// clock, to compare them on a machine; anything else (nullopt) leaves the
// choice to CounterUsableHere.
std::optional<bool> ForcedOpClock(const char* value);

}  // namespace deepcontext::cpu
