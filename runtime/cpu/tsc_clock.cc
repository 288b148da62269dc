#include "runtime/cpu/tsc_clock.h"

#include <cstdio>
#include <cstring>

namespace deepcontext::cpu {
namespace {

#if defined(__x86_64__)
// A (counter, CLOCK_MONOTONIC) pair read as close together as possible: of
// a few tries, the one whose counter reads around the clock read are
// nearest, the clock read taken as at their midpoint.
struct Pair {
  double ticks;
  int64_t ns;
};

Pair ReadPair() {
  Pair best{0, 0};
  uint64_t best_window = ~uint64_t{0};
  for (int i = 0; i < 8; ++i) {
    const uint64_t before = __rdtsc();
    const int64_t ns = MonotonicNs();
    const uint64_t after = __rdtsc();
    if (after - before < best_window) {
      best_window = after - before;
      best = Pair{static_cast<double>(before) + static_cast<double>(after - before) / 2,
                  ns};
    }
  }
  return best;
}
#endif

}  // namespace

bool KernelClockIsTsc() {
#if !defined(__x86_64__)
  // The counter is x86's: elsewhere "tsc" can only be an x86 host's /sys
  // seen by an emulated process (qemu-user), whose counter it cannot read.
  return false;
#else
  FILE* file = std::fopen(
      "/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (file == nullptr) return false;
  char name[64] = {0};
  const bool read = std::fgets(name, sizeof(name), file) != nullptr;
  std::fclose(file);
  return read && std::strcmp(name, "tsc\n") == 0;
#endif
}

TscClock TscClock::Calibrated(int64_t calibration_ns) {
#if defined(__x86_64__)
  if (!KernelClockIsTsc()) return Monotonic();
  const Pair start = ReadPair();
  while (MonotonicNs() - start.ns < calibration_ns) {
  }
  const Pair end = ReadPair();
  const double ticks = end.ticks - start.ticks;
  if (!(ticks > 0) || end.ns <= start.ns) return Monotonic();
  return TscClock(true, static_cast<double>(end.ns - start.ns) / ticks);
#else
  (void)calibration_ns;
  return Monotonic();
#endif
}

const TscClock& TscClock::Process() {
  // 2 ms: read jitter of tens of ns puts the rate within about 1e-5.
  static const TscClock clock = Calibrated(2000000);
  return clock;
}

}  // namespace deepcontext::cpu
