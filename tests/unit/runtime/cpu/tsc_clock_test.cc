#include "runtime/cpu/tsc_clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string_view>
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
  const TscClock clock = TscClock::Calibrated(2000000, CounterUsableHere());
  // The counter is used exactly where the kernel keeps time with it.
  EXPECT_EQ(clock.uses_counter(), CounterUsableHere());
  if (clock.uses_counter()) {
#if defined(__aarch64__)
    // The generic timer counts at 1 MHz to 1 GHz (1 GHz from Armv8.6 on).
    EXPECT_GE(clock.ns_per_tick(), 0.99);
    EXPECT_LE(clock.ns_per_tick(), 1000.0);
#else
    // Any CPU of the last decades counts between 0.5 and 10 GHz.
    EXPECT_GT(clock.ns_per_tick(), 0.1);
    EXPECT_LT(clock.ns_per_tick(), 2.0);
#endif
  }
  ExpectDurationsAgree(clock);
}

TEST(TscClockTest, ACounterChosenByTheCallerIsCalibrated) {
  // Forced, as DEEPCONTEXT_OP_CLOCK=counter does, where the kernel keeps
  // time with another clock too (and under qemu-user, which emulates
  // AArch64's counter); there is no counter to read off x86-64 and AArch64.
  const TscClock clock = TscClock::Calibrated(2000000, /*use_counter=*/true);
  EXPECT_EQ(clock.uses_counter(), TscClock::kHasCounter);
  ExpectDurationsAgree(clock);
  EXPECT_FALSE(TscClock::Calibrated(2000000, /*use_counter=*/false).uses_counter());
}

TEST(TscClockTest, ProcessClockIsCalibratedOnce) {
  const TscClock& first = TscClock::Process();
  EXPECT_EQ(&first, &TscClock::Process());
  EXPECT_EQ(first.uses_counter(),
            TscClock::kHasCounter && ForcedOpClock(std::getenv("DEEPCONTEXT_OP_CLOCK"))
                                         .value_or(CounterUsableHere()));
  ExpectDurationsAgree(first);
}

constexpr std::string_view kInvariantFlags =
    "fpu vme tsc msr pae constant_tsc rep_good nopl nonstop_tsc cpuid tsc_known_freq";

TEST(CounterUsableTest, WhereTheKernelKeepsTimeWithIt) {
  EXPECT_TRUE(CounterUsable({"tsc\n", "tsc hpet acpi_pm\n", ""}));
  EXPECT_TRUE(CounterUsable({"tsc", "", "fpu tsc"}));
}

TEST(CounterUsableTest, WhereTheKernelListsItOnAnInvariantCounter) {
  // AWS Nitro's default: kvm-clock keeps time, the counter is listed.
  EXPECT_TRUE(CounterUsable({"kvm-clock\n", "kvm-clock tsc acpi_pm \n", kInvariantFlags}));
  // Not invariant: its rate may change with the CPU's frequency or stop in
  // deep sleep states.
  EXPECT_FALSE(CounterUsable({"kvm-clock\n", "kvm-clock tsc acpi_pm\n",
                              "fpu tsc constant_tsc tsc_reliable"}));
  EXPECT_FALSE(CounterUsable({"kvm-clock\n", "kvm-clock tsc acpi_pm\n",
                              "fpu tsc nonstop_tsc"}));
}

TEST(CounterUsableTest, NotWhereTheKernelLeftItOut) {
  // Marked unstable (tsc=unstable on this kind of virtual machine): the
  // kernel does not list it, whatever the CPU says.
  EXPECT_FALSE(CounterUsable({"kvm-clock\n", "kvm-clock \n", kInvariantFlags}));
  // Names that only contain "tsc".
  EXPECT_FALSE(CounterUsable({"hyperv_clocksource_tsc_page\n",
                              "hyperv_clocksource_tsc_page acpi_pm\n", kInvariantFlags}));
  // Nothing readable (no /sys): no counter.
  EXPECT_FALSE(CounterUsable({"", "", kInvariantFlags}));
}

TEST(CounterUsableTest, OnAArch64WhereTheKernelKeepsTimeWithTheGenericTimer) {
  EXPECT_TRUE(ArchCounterUsable("arch_sys_counter\n"));
  // The memory-mapped timer, or a kernel that left the generic timer for
  // another clocksource (an erratum workaround, a hypervisor's clock).
  EXPECT_FALSE(ArchCounterUsable("arch_mem_counter\n"));
  EXPECT_FALSE(ArchCounterUsable("kvm-clock\n"));
  // x86's name is no AArch64 counter (an emulated process sees the host's
  // /sys), and no /sys means no counter.
  EXPECT_FALSE(ArchCounterUsable("tsc\n"));
  EXPECT_FALSE(ArchCounterUsable(""));
}

TEST(CounterUsableTest, TheEnvironmentForcesEitherClock) {
  EXPECT_EQ(ForcedOpClock(nullptr), std::nullopt);
  EXPECT_EQ(ForcedOpClock("counter"), std::optional<bool>(true));
  EXPECT_EQ(ForcedOpClock("monotonic"), std::optional<bool>(false));
  EXPECT_EQ(ForcedOpClock("tsc"), std::nullopt);
  EXPECT_EQ(ForcedOpClock(""), std::nullopt);
}

}  // namespace
}  // namespace deepcontext::cpu
