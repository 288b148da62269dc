#include "runtime/cpu/perf_counters.h"

#include <gtest/gtest.h>
#include <time.h>

#include <vector>

#include "tests/unit/runtime/cpu/fake_perf_syscalls.h"

namespace deepcontext::cpu {
namespace {

TEST(PerfCounters, DefaultEventsAreCyclesInstructionsAndCacheMisses) {
  std::vector<std::string_view> metrics;
  for (const CounterEvent& event : DefaultCounterEvents()) {
    metrics.push_back(event.metric);
    EXPECT_EQ(event.type, PERF_TYPE_HARDWARE);
  }
  EXPECT_EQ(metrics, (std::vector<std::string_view>{
                         "cpu_cycles", "cpu_instructions", "cpu_cache_misses"}));
}

TEST(PerfCounters, ProbeSaysInOneLineThatTheVmExposesNoHardwareCounters) {
  FakePerfSyscalls kernel;
  for (const CounterEvent& event : DefaultCounterEvents()) {
    kernel.Refuse(event.type, event.config, ENOENT);
  }
  const CounterProbe probe = Probe(kernel, DefaultCounterEvents());
  EXPECT_TRUE(probe.usable.empty());
  EXPECT_EQ(probe.warning.find('\n'), std::string::npos);
  EXPECT_TRUE(probe.warning.starts_with("CPU counters unavailable: "))
      << probe.warning;
  EXPECT_EQ(probe.warning,
            "CPU counters unavailable: perf_event_open(cycles, instructions, "
            "cache misses): No such file or directory (this kernel or VM "
            "exposes no such hardware counters)");
  EXPECT_EQ(kernel.open_fds, 0);
}

TEST(PerfCounters, ProbeNamesParanoiaWhenForbidden) {
  FakePerfSyscalls kernel;
  kernel.Refuse(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, EACCES);
  const CounterProbe probe = Probe(kernel, DefaultCounterEvents());
  ASSERT_EQ(probe.usable.size(), 2u);
  EXPECT_EQ(probe.usable[0].metric, "cpu_instructions");
  EXPECT_TRUE(probe.warning.starts_with("some CPU counters unavailable: "))
      << probe.warning;
  EXPECT_NE(probe.warning.find("kernel.perf_event_paranoid"), std::string::npos)
      << probe.warning;
  EXPECT_EQ(kernel.open_fds, 0);
}

TEST(PerfCounters, ProbeOfUsableEventsHasNoWarning) {
  FakePerfSyscalls kernel;
  const CounterProbe probe = Probe(kernel, DefaultCounterEvents());
  EXPECT_EQ(probe.usable.size(), 3u);
  EXPECT_EQ(probe.warning, "");
}

TEST(PerfCounters, OpensOneGroupLedByTheFirstEvent) {
  FakePerfSyscalls kernel;
  auto opened = ThreadCounters::Open(kernel, DefaultCounterEvents(), 42);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  std::unique_ptr<ThreadCounters> counters = std::move(*opened);
  ASSERT_EQ(kernel.opens.size(), 3u);
  EXPECT_EQ(kernel.opens[0].group_fd, -1);
  EXPECT_EQ(kernel.opens[1].group_fd, 100);  // the leader's fd
  EXPECT_EQ(kernel.opens[2].group_fd, 100);
  for (const auto& call : kernel.opens) EXPECT_EQ(call.tid, 42);
  counters.reset();
  EXPECT_EQ(kernel.open_fds, 0);
}

// A group read gives only the leader's enabled/running times, so every
// member must count whenever the leader does: the leader waits, disabled,
// until the last member is in, and is then enabled alone (enabling the
// members too, PERF_IOC_FLAG_GROUP, leaves members of another PMU stopped).
TEST(PerfCounters, GroupStartsCountingOnceTheLastMemberIsIn) {
  FakePerfSyscalls kernel;
  auto counters = ThreadCounters::Open(kernel, DefaultCounterEvents(), 0);
  ASSERT_TRUE(counters.ok()) << counters.status().message();
  ASSERT_EQ(kernel.opens.size(), 3u);
  EXPECT_TRUE(kernel.opens[0].disabled);
  EXPECT_FALSE(kernel.opens[1].disabled);
  EXPECT_FALSE(kernel.opens[2].disabled);
  ASSERT_EQ(kernel.enables.size(), 1u);
  EXPECT_EQ(kernel.enables[0].fd, 100);  // the leader
  EXPECT_EQ(kernel.enables[0].opens_before, 3u);
}

TEST(PerfCounters, FailedEnableClosesTheGroupAndSaysSo) {
  FakePerfSyscalls kernel;
  kernel.FailEnables(EINVAL);
  const auto counters = ThreadCounters::Open(kernel, DefaultCounterEvents(), 0);
  ASSERT_FALSE(counters.ok());
  EXPECT_EQ(counters.status().message(), "PERF_EVENT_IOC_ENABLE: Invalid argument");
  EXPECT_EQ(kernel.open_fds, 0);
}

TEST(PerfCounters, FailedMemberClosesTheGroupAndSaysWhich) {
  FakePerfSyscalls kernel;
  kernel.Refuse(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, ENOENT);
  const auto counters = ThreadCounters::Open(kernel, DefaultCounterEvents(), 0);
  ASSERT_FALSE(counters.ok());
  EXPECT_EQ(counters.status().message(),
            "perf_event_open(cache misses): No such file or directory");
  EXPECT_EQ(kernel.open_fds, 0);
}

TEST(PerfCounters, ReadScalesMultiplexedCounts) {
  FakePerfSyscalls kernel;
  auto opened = ThreadCounters::Open(kernel, DefaultCounterEvents(), 0);
  ASSERT_TRUE(opened.ok());
  std::unique_ptr<ThreadCounters> counters = std::move(*opened);
  std::vector<uint64_t> counts;
  kernel.SetCounts({1000, 2000, 30});
  ASSERT_TRUE(counters->Read(&counts));
  EXPECT_EQ(counts, (std::vector<uint64_t>{1000, 2000, 30}));
  // Counted a quarter of the time it was enabled: four times as much.
  kernel.SetCounts({1000, 2000, 30}, /*enabled=*/400, /*running=*/100);
  ASSERT_TRUE(counters->Read(&counts));
  EXPECT_EQ(counts, (std::vector<uint64_t>{4000, 8000, 120}));
  kernel.FailReads(true);
  EXPECT_FALSE(counters->Read(&counts));
  EXPECT_EQ(counts, (std::vector<uint64_t>{4000, 8000, 120}));  // unchanged
}

TEST(PerfCounters, DeltasSkipCountersThatWentBackwards) {
  std::vector<uint64_t> last, deltas;
  CountDeltas({10, 20}, &last, &deltas);
  EXPECT_EQ(deltas, (std::vector<uint64_t>{10, 20}));
  CountDeltas({15, 18}, &last, &deltas);
  EXPECT_EQ(deltas, (std::vector<uint64_t>{5, 0}));
  EXPECT_EQ(last, (std::vector<uint64_t>{15, 20}));
  CountDeltas({15, 26}, &last, &deltas);
  EXPECT_EQ(deltas, (std::vector<uint64_t>{0, 6}));
}

// The real kernel, with software events (this machine and many VMs expose
// no hardware ones): the group counts the calling thread's own work. The
// task clock and the cpu clock are two kernel PMUs; a member of another PMU
// than the leader's is what a group enabled too early leaves stopped until
// the thread's next context switch (0 to a few ms of the 20 here), so this
// also checks that the whole group starts at once.
TEST(PerfCounters, KernelCountsTheThreadsSoftwareEvents) {
  static constexpr CounterEvent kSoftware[] = {
      {"task_clock", "task clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, ""},
      {"cpu_clock", "cpu clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, ""},
  };
  const CounterProbe probe = Probe(KernelPerfSyscalls(), kSoftware);
  if (probe.usable.size() != 2) GTEST_SKIP() << probe.warning;
  auto opened = ThreadCounters::Open(KernelPerfSyscalls(), kSoftware, 0);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  std::unique_ptr<ThreadCounters> counters = std::move(*opened);
  std::vector<uint64_t> before, after;
  ASSERT_TRUE(counters->Read(&before));
  timespec start{}, now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  do {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000000000L + now.tv_nsec - start.tv_nsec <
           20000000);
  ASSERT_TRUE(counters->Read(&after));
  // Both in ns; the group reads them together. Both clocks count the
  // thread's time on a CPU, preempted or not, so each must show most of
  // the 20 ms (a counter that does not count reads 0), and the same time
  // as the other: a member that started late reads a few ms short.
  const uint64_t task_clock = after[0] - before[0];
  const uint64_t cpu_clock = after[1] - before[1];
  EXPECT_GE(task_clock, 10000000u);
  EXPECT_GE(cpu_clock, 10000000u);
  EXPECT_NEAR(static_cast<double>(cpu_clock), static_cast<double>(task_clock),
              1000000.0);
}

}  // namespace
}  // namespace deepcontext::cpu
