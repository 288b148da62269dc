// Cache eviction between a benchmark's events: in a training step the
// framework's own work between two ops (or two launches) evicts the
// profiler's per-thread and global state from the L1 and L2 caches, so an
// event costs more than a tight loop shows. Benchmarks read ColdCaches'
// buffer between events and compare against a baseline that does the same;
// cachegrind on such a configuration counts the lines each event misses.
#pragma once

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

  // Reads rather than writes: no dirty lines to write back, so the
  // eviction itself costs less and varies less.
  void Evict() const {
    unsigned sum = 0;
    for (size_t i = 0; i < buffer_.size(); i += 64) {
      sum += static_cast<unsigned char>(buffer_[i]);
    }
    asm volatile("" ::"r"(sum) : "memory");
  }

 private:
  std::vector<char> buffer_;
};

}  // namespace deepcontext::bench
