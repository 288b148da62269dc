// Clocks read at every op boundary.
#pragma once

#include <time.h>

#include <cstdint>

namespace deepcontext::cpu {

// CPU time consumed by the calling thread, in ns. A real syscall on most
// kernels (not vDSO), so it is read exactly twice per op.
inline int64_t ThreadCpuTimeNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Monotonic wall clock in ns (vDSO, ~20 ns).
inline int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Wall-clock time since the epoch in ns, for metadata.
inline int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

}  // namespace deepcontext::cpu
