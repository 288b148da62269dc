#include "runtime/cpu/tsc_clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "runtime/cpu/clocks.h"

namespace deepcontext::cpu {
namespace {

// Measures a sleep with `clock` and with CLOCK_MONOTONIC around it.
void ExpectDurationsAgree(const TscClock& clock) {
  const int64_t outer_start = MonotonicNs();
  const int64_t start = clock.NowTicks();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const int64_t end = clock.NowTicks();
  const int64_t outer = MonotonicNs() - outer_start;
  const int64_t measured = clock.TicksToNs(end - start);
  EXPECT_GE(measured, 30000000);
  // Within the clock reads around it and 1 % of rate error.
  EXPECT_LE(measured, outer + outer / 100);
}

TEST(TscClockTest, MonotonicTicksAreNanoseconds) {
  const TscClock clock = TscClock::Monotonic();
  EXPECT_FALSE(clock.uses_counter());
  EXPECT_EQ(clock.TicksToNs(123456789), 123456789);
  const int64_t before = MonotonicNs();
  const int64_t ticks = clock.NowTicks();
  EXPECT_GE(ticks, before);
  EXPECT_LE(ticks, MonotonicNs());
  ExpectDurationsAgree(clock);
}

TEST(TscClockTest, CalibratedDurationsMatchTheMonotonicClock) {
  const TscClock clock = TscClock::Calibrated(2000000);
  // The counter is used exactly where the kernel keeps time with it.
  EXPECT_EQ(clock.uses_counter(), KernelClockIsTsc());
  if (clock.uses_counter()) {
    // Any CPU of the last decades counts between 0.5 and 10 GHz.
    EXPECT_GT(clock.ns_per_tick(), 0.1);
    EXPECT_LT(clock.ns_per_tick(), 2.0);
  }
  ExpectDurationsAgree(clock);
}

TEST(TscClockTest, ProcessClockIsCalibratedOnce) {
  const TscClock& first = TscClock::Process();
  EXPECT_EQ(&first, &TscClock::Process());
  EXPECT_EQ(first.uses_counter(), KernelClockIsTsc());
  ExpectDurationsAgree(first);
}

}  // namespace
}  // namespace deepcontext::cpu
