#include "runtime/cpu/tsc_clock.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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

// Whether the whitespace-separated `words` hold `word`.
bool HasWord(std::string_view words, std::string_view word) {
  size_t at = 0;
  while (at < words.size()) {
    const size_t start = words.find_first_not_of(" \t\n", at);
    if (start == std::string_view::npos) break;
    size_t end = words.find_first_of(" \t\n", start);
    if (end == std::string_view::npos) end = words.size();
    if (words.substr(start, end - start) == word) return true;
    at = end;
  }
  return false;
}

#if defined(__x86_64__)
// The first line of `path` (or, with `prefix`, the first line starting with
// it), without its newline; empty when unreadable. Lines may be longer than
// the read buffer (cpuinfo's flags run to thousands of characters).
std::string ReadLine(const char* path, std::string_view prefix = {}) {
  FILE* file = std::fopen(path, "r");
  if (file == nullptr) return {};
  std::string line;
  char chunk[512];
  while (std::fgets(chunk, sizeof(chunk), file) != nullptr) {
    line += chunk;
    if (line.back() != '\n' && !std::feof(file)) continue;  // the line goes on
    if (!line.empty() && line.back() == '\n') line.pop_back();
    if (std::string_view(line).starts_with(prefix)) break;
    line.clear();
  }
  std::fclose(file);
  return line;
}
#endif

}  // namespace

bool CounterUsable(const CounterEvidence& evidence) {
  if (HasWord(evidence.current_clocksource, "tsc")) return true;
  return HasWord(evidence.available_clocksources, "tsc") &&
         HasWord(evidence.cpu_flags, "constant_tsc") &&
         HasWord(evidence.cpu_flags, "nonstop_tsc");
}

bool CounterUsableHere() {
#if !defined(__x86_64__)
  return false;
#else
  const std::string current = ReadLine(
      "/sys/devices/system/clocksource/clocksource0/current_clocksource");
  const std::string available = ReadLine(
      "/sys/devices/system/clocksource/clocksource0/available_clocksource");
  // Every processor's line lists the same flags; the first is read.
  const std::string flags = ReadLine("/proc/cpuinfo", "flags");
  return CounterUsable(CounterEvidence{current, available, flags});
#endif
}

bool ParseOpClock(const char* value, bool* forced) {
  *forced = value != nullptr && (std::strcmp(value, "counter") == 0 ||
                                 std::strcmp(value, "monotonic") == 0);
  return *forced && std::strcmp(value, "counter") == 0;
}

TscClock TscClock::Calibrated(int64_t calibration_ns) {
  return Calibrated(calibration_ns, CounterUsableHere());
}

TscClock TscClock::Calibrated(int64_t calibration_ns, bool use_counter) {
#if defined(__x86_64__)
  if (!use_counter) return Monotonic();
  const Pair start = ReadPair();
  while (MonotonicNs() - start.ns < calibration_ns) {
  }
  const Pair end = ReadPair();
  const double ticks = end.ticks - start.ticks;
  if (!(ticks > 0) || end.ns <= start.ns) return Monotonic();
  return TscClock(true, static_cast<double>(end.ns - start.ns) / ticks);
#else
  (void)calibration_ns;
  (void)use_counter;
  return Monotonic();
#endif
}

const TscClock& TscClock::Process() {
  // 2 ms: read jitter of tens of ns puts the rate within about 1e-5.
  static const TscClock clock = [] {
    bool forced = false;
    const bool counter = ParseOpClock(std::getenv("DEEPCONTEXT_OP_CLOCK"), &forced);
    return Calibrated(2000000, forced ? counter : CounterUsableHere());
  }();
  return clock;
}

}  // namespace deepcontext::cpu
