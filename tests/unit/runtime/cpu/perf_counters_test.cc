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
  std::string error;
  auto counters = ThreadCounters::Open(kernel, DefaultCounterEvents(), 42, &error);
  ASSERT_NE(counters, nullptr) << error;
  ASSERT_EQ(kernel.opens.size(), 3u);
  EXPECT_EQ(kernel.opens[0].group_fd, -1);
  EXPECT_EQ(kernel.opens[1].group_fd, 100);  // the leader's fd
  EXPECT_EQ(kernel.opens[2].group_fd, 100);
  for (const auto& call : kernel.opens) EXPECT_EQ(call.tid, 42);
  counters.reset();
  EXPECT_EQ(kernel.open_fds, 0);
}

TEST(PerfCounters, FailedMemberClosesTheGroupAndSaysWhich) {
  FakePerfSyscalls kernel;
  kernel.Refuse(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, ENOENT);
  std::string error;
  EXPECT_EQ(ThreadCounters::Open(kernel, DefaultCounterEvents(), 0, &error), nullptr);
  EXPECT_EQ(error, "perf_event_open(cache misses): No such file or directory");
  EXPECT_EQ(kernel.open_fds, 0);
}

TEST(PerfCounters, ReadScalesMultiplexedCounts) {
  FakePerfSyscalls kernel;
  std::string error;
  auto counters = ThreadCounters::Open(kernel, DefaultCounterEvents(), 0, &error);
  ASSERT_NE(counters, nullptr);
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
// no hardware ones): the group counts the calling thread's own work.
TEST(PerfCounters, KernelCountsTheThreadsSoftwareEvents) {
  static constexpr CounterEvent kSoftware[] = {
      {"task_clock", "task clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, ""},
      {"cpu_clock", "cpu clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, ""},
  };
  const CounterProbe probe = Probe(KernelPerfSyscalls(), kSoftware);
  if (probe.usable.size() != 2) GTEST_SKIP() << probe.warning;
  std::string error;
  auto counters = ThreadCounters::Open(KernelPerfSyscalls(), kSoftware, 0, &error);
  ASSERT_NE(counters, nullptr) << error;
  std::vector<uint64_t> before, after;
  ASSERT_TRUE(counters->Read(&before));
  timespec start{}, now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  do {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000000000L + now.tv_nsec - start.tv_nsec <
           20000000);
  ASSERT_TRUE(counters->Read(&after));
  // Both in ns; the group reads them together.
  EXPECT_GE(after[0] - before[0], 10000000u);
  EXPECT_GE(after[1] - before[1], 10000000u);
}

}  // namespace
}  // namespace deepcontext::cpu
