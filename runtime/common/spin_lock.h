// A tiny test-and-test-and-set lock for very short critical sections on hot
// paths (one hash probe, one accumulator update) where a futex-based mutex
// costs more than the work it protects.
#pragma once

#include <atomic>

namespace deepcontext {

class SpinLock {
 public:
  void lock() {
    for (;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) CpuRelax();
    }
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  static inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  std::atomic<bool> locked_{false};
};

}  // namespace deepcontext
