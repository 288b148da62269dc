// Cache eviction between a benchmark's events: in a training step the
// framework's own work between two ops (or two launches) evicts the
// profiler's per-thread and global state from the L1 and L2 caches, so an
// event costs more than a tight loop shows. Benchmarks time their events
// through TimeNs and compare against a baseline that does the same;
// cachegrind on such a configuration counts the lines each event misses.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

namespace deepcontext::bench {

class ColdCaches {
 public:
  // Far larger than any L1 cache, and than the L2 of the CPU test box (512
  // KiB per core): there every event starts with the profiler's state in
  // the L3 cache at best. Cores with a larger L2 keep it in L2.
  static constexpr size_t kBytes = size_t{1} << 20;

  explicit ColdCaches(bool on) : buffer_(on ? kBytes : 0) {}

  // Runs body(i) for i in [0, count) and returns the nanoseconds spent in
  // it. With the caches cold, each call is timed alone after an eviction:
  // the eviction takes far longer than an event, and its own variation
  // would drown the event's. Otherwise the loop is timed as a whole.
  template <typename Body>
  double TimeNs(int count, Body&& body) const {
    using Clock = std::chrono::steady_clock;
    Clock::duration total{};
    if (!buffer_.empty()) {
      for (int i = 0; i < count; ++i) {
        Evict();
        const auto start = Clock::now();
        body(i);
        total += Clock::now() - start;
      }
    } else {
      const auto start = Clock::now();
      for (int i = 0; i < count; ++i) body(i);
      total = Clock::now() - start;
    }
    return std::chrono::duration<double, std::nano>(total).count();
  }

 private:
  // Reads rather than writes: no dirty lines to write back, so the
  // eviction itself costs less and varies less.
  void Evict() const {
    unsigned sum = 0;
    for (size_t i = 0; i < buffer_.size(); i += 64) {
      sum += static_cast<unsigned char>(buffer_[i]);
    }
    asm volatile("" ::"r"(sum) : "memory");
  }

  std::vector<char> buffer_;
};

}  // namespace deepcontext::bench
