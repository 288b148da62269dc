// The CPU sampler with hardware counters: the increase of each counter since
// the last tick goes to the op current at the tick, like CPU time. The
// kernel is replaced by a fake whose counts the test sets.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "runtime/cpu/perf_counters.h"
#include "runtime/profiler/cpu_sampler.h"
#include "tests/unit/runtime/cpu/fake_perf_syscalls.h"

namespace deepcontext::profiler {
namespace {

// metric name -> context -> sum
std::map<std::string, std::map<ContextId, double>> Values(const MetricStore& store) {
  std::map<std::string, std::map<ContextId, double>> out;
  const auto metrics = store.Metrics();
  store.ForEach(64, [&](ContextId context, MetricId metric, const Accumulator& value) {
    out[metrics[metric].name][context] += value.sum;
  });
  return out;
}

TEST(CpuSamplerCounters, ChargesEachCountersIncreaseToTheCurrentOp) {
  MetricStore store;
  const MetricId cpu = store.Register("cpu_time", "ns", "");
  CpuSampler sampler(store, cpu);
  cpu::FakePerfSyscalls kernel;
  sampler.EnableCounters(cpu::DefaultCounterEvents(), kernel);
  EXPECT_TRUE(sampler.counting());
  auto thread = sampler.RegisterCurrentThread(/*outside_ops=*/5);
  ASSERT_NE(thread, nullptr);
  EXPECT_EQ(sampler.counted_threads(), 1u);

  thread->current.store(10);
  kernel.SetCounts({1000, 3000, 7});
  sampler.SampleAll();
  thread->current.store(11);
  kernel.SetCounts({1500, 3100, 9});
  sampler.SampleAll();
  thread->current.store(0);  // outside ops: the thread's node
  kernel.SetCounts({1600, 3100, 9});
  sampler.SampleAll();

  auto values = Values(store);
  EXPECT_EQ(values["cpu_cycles"][10], 1000);
  EXPECT_EQ(values["cpu_cycles"][11], 500);
  EXPECT_EQ(values["cpu_cycles"][5], 100);
  EXPECT_EQ(values["cpu_instructions"][10], 3000);
  EXPECT_EQ(values["cpu_instructions"][11], 100);
  EXPECT_EQ(values["cpu_instructions"].count(5), 0u);  // no increase, no sample
  EXPECT_EQ(values["cpu_cache_misses"][11], 2);
  sampler.Unregister(thread);
  EXPECT_EQ(kernel.open_fds, 0);
}

TEST(CpuSamplerCounters, CountsOfAPauseAreNotChargedAfterIt) {
  MetricStore store;
  CpuSampler sampler(store, store.Register("cpu_time", "ns", ""));
  cpu::FakePerfSyscalls kernel;
  // A thread registered before counting starts is counted too.
  auto thread = sampler.RegisterCurrentThread(5);
  ASSERT_NE(thread, nullptr);
  sampler.EnableCounters(cpu::DefaultCounterEvents(), kernel);
  EXPECT_EQ(sampler.counted_threads(), 1u);
  thread->current.store(10);
  sampler.SetPaused(true);
  kernel.SetCounts({5000, 5000, 50});
  sampler.SampleAll();
  sampler.SetPaused(false);
  kernel.SetCounts({5200, 5000, 50});
  sampler.SampleAll();
  auto values = Values(store);
  EXPECT_EQ(values["cpu_cycles"][10], 200);
  sampler.Unregister(thread);
}

TEST(CpuSamplerCounters, ThreadsWhoseGroupFailsCountCpuTimeOnly) {
  MetricStore store;
  CpuSampler sampler(store, store.Register("cpu_time", "ns", ""));
  cpu::FakePerfSyscalls kernel;
  kernel.Refuse(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, EMFILE);
  sampler.EnableCounters(cpu::DefaultCounterEvents(), kernel);
  auto thread = sampler.RegisterCurrentThread(5);
  ASSERT_NE(thread, nullptr);
  std::string error;
  EXPECT_EQ(sampler.counter_failures(&error), 1u);
  EXPECT_EQ(error, "perf_event_open(instructions): Too many open files");
  EXPECT_EQ(sampler.counted_threads(), 0u);
  kernel.SetCounts({1, 2, 3});
  sampler.SampleAll();
  EXPECT_EQ(Values(store).count("cpu_cycles"), 0u);
  sampler.Unregister(thread);
}

TEST(CpuSamplerCounters, DisablingClosesEveryGroupAndStopsCharging) {
  MetricStore store;
  CpuSampler sampler(store, store.Register("cpu_time", "ns", ""));
  cpu::FakePerfSyscalls kernel;
  sampler.EnableCounters(cpu::DefaultCounterEvents(), kernel);
  auto thread = sampler.RegisterCurrentThread(5);
  ASSERT_NE(thread, nullptr);
  thread->current.store(10);
  sampler.DisableCounters();
  EXPECT_FALSE(sampler.counting());
  EXPECT_EQ(kernel.open_fds, 0);
  kernel.SetCounts({100, 100, 100});
  sampler.SampleAll();
  EXPECT_EQ(Values(store).count("cpu_cycles"), 0u);
  // Enabled again (the next session asks): counting starts afresh.
  sampler.EnableCounters(cpu::DefaultCounterEvents(), kernel);
  EXPECT_EQ(kernel.open_fds, 3);
  kernel.SetCounts({40, 50, 60});
  sampler.SampleAll();
  EXPECT_EQ(Values(store)["cpu_cycles"][10], 40);
  sampler.Unregister(thread);
}

TEST(CpuSamplerCounters, ForkedChildClosesTheParentsGroups) {
  MetricStore store;
  CpuSampler sampler(store, store.Register("cpu_time", "ns", ""));
  cpu::FakePerfSyscalls kernel;
  sampler.EnableCounters(cpu::DefaultCounterEvents(), kernel);
  auto thread = sampler.RegisterCurrentThread(5);
  ASSERT_NE(thread, nullptr);
  EXPECT_EQ(kernel.open_fds, 3);
  sampler.ResetAfterFork();
  EXPECT_EQ(kernel.open_fds, 0);
  // The child's threads register and count again.
  auto again = sampler.RegisterCurrentThread(5);
  EXPECT_EQ(kernel.open_fds, 3);
  sampler.Unregister(again);
}

}  // namespace
}  // namespace deepcontext::profiler
