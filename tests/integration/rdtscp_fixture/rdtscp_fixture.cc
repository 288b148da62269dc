// Test library of test_bench_rdtscp_audit.py (loaded with ctypes): one
// function that reads the time stamp counter with RDTSCP, as libhwy's
// timers do (bench/rdtscp_audit.cc rewrites it where valgrind would stop).
#include <cstdint>

extern "C" __attribute__((visibility("default"), noinline)) uint64_t dc_fixture_read_tsc() {
  uint32_t low = 0;
  uint32_t high = 0;
  uint32_t processor = 0;
  asm volatile("rdtscp" : "=a"(low), "=d"(high), "=c"(processor));
  return (static_cast<uint64_t>(high) << 32) | low;
}
