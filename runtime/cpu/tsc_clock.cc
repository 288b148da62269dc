#include "runtime/cpu/tsc_clock.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace deepcontext::cpu {
namespace {

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
    const uint64_t before = TscClock::ReadCounter();
    const int64_t ns = MonotonicNs();
    const uint64_t after = TscClock::ReadCounter();
    if (after - before < best_window) {
      best_window = after - before;
      best = Pair{static_cast<double>(before) + static_cast<double>(after - before) / 2,
                  ns};
    }
  }
  return best;
}

// Whether the whitespace-separated `words` hold `word`.
bool HasWord(std::string_view words, std::string_view word) {
  std::istringstream in{std::string(words)};
  std::string each;
  while (in >> each) {
    if (each == word) return true;
  }
  return false;
}

#if defined(__x86_64__) || defined(__aarch64__)
// The first line of `path` starting with `prefix`, without its newline;
// empty when there is none or the file is unreadable.
std::string ReadLine(const char* path, std::string_view prefix = {}) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (std::string_view(line).starts_with(prefix)) return line;
  }
  return {};
}
#endif

}  // namespace

bool CounterUsable(const CounterEvidence& evidence) {
  if (HasWord(evidence.current_clocksource, "tsc")) return true;
  return HasWord(evidence.available_clocksources, "tsc") &&
         HasWord(evidence.cpu_flags, "constant_tsc") &&
         HasWord(evidence.cpu_flags, "nonstop_tsc");
}

bool ArchCounterUsable(std::string_view current_clocksource) {
  return HasWord(current_clocksource, "arch_sys_counter");
}

bool CounterUsableHere() {
#if defined(__x86_64__)
  const std::string current = ReadLine(
      "/sys/devices/system/clocksource/clocksource0/current_clocksource");
  const std::string available = ReadLine(
      "/sys/devices/system/clocksource/clocksource0/available_clocksource");
  // Every processor's line lists the same flags; the first is read.
  const std::string flags = ReadLine("/proc/cpuinfo", "flags");
  return CounterUsable(CounterEvidence{current, available, flags});
#elif defined(__aarch64__)
  return ArchCounterUsable(
      ReadLine("/sys/devices/system/clocksource/clocksource0/current_clocksource"));
#else
  return false;
#endif
}

std::optional<bool> ForcedOpClock(const char* value) {
  if (value == nullptr) return std::nullopt;
  if (std::strcmp(value, "counter") == 0) return true;
  if (std::strcmp(value, "monotonic") == 0) return false;
  return std::nullopt;
}

TscClock TscClock::Calibrated(int64_t calibration_ns, bool use_counter) {
  if (!kHasCounter || !use_counter) return Monotonic();
  const Pair start = ReadPair();
  while (MonotonicNs() - start.ns < calibration_ns) {
  }
  const Pair end = ReadPair();
  const double ticks = end.ticks - start.ticks;
  if (!(ticks > 0) || end.ns <= start.ns) return Monotonic();
  return TscClock(true, static_cast<double>(end.ns - start.ns) / ticks);
}

const TscClock& TscClock::Process() {
  // 2 ms: read jitter of tens of ns puts the rate within about 1e-5.
  static const TscClock clock = Calibrated(
      2000000, ForcedOpClock(std::getenv("DEEPCONTEXT_OP_CLOCK")).value_or(CounterUsableHere()));
  return clock;
}

}  // namespace deepcontext::cpu
