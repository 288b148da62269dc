// A tiny test-and-test-and-set lock for very short critical sections on hot
// paths (one hash probe, one accumulator update) where a futex-based mutex
// costs more than the work it protects. A waiter that has spun for long
// (the holder was preempted, or holds the lock for a rare long sweep)
// yields its CPU instead of burning its whole time slice, which on a
// machine with fewer cores than busy threads may be the one the holder
// needs.
#pragma once

#include <sched.h>

#include <atomic>

namespace deepcontext {

class SpinLock {
 public:
  void lock() {
    int spins = 0;
    for (;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < kSpinsBeforeYield) {
          CpuRelax();
        } else {
          sched_yield();
        }
      }
    }
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  // About 10 to 50 microseconds of pause instructions: far longer than any
  // critical section this lock is meant for.
  static constexpr int kSpinsBeforeYield = 1024;

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
