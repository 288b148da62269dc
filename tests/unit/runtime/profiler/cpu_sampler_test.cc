#include "runtime/profiler/cpu_sampler.h"

#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "tests/unit/runtime/thread_names.h"

namespace deepcontext::profiler {
namespace {

int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

void Spin(int64_t ns) {
  const int64_t end = ThreadCpuNs() + ns;
  while (ThreadCpuNs() < end) {
  }
}

std::map<ContextId, double> CpuByContext(const MetricStore& store) {
  std::map<ContextId, double> out;
  store.ForEach(64, [&](ContextId context, MetricId, const Accumulator& value) {
    out[context] += value.sum;
  });
  return out;
}

TEST(CpuSampler, ItsThreadIsNamedWhileItRuns) {
  MetricStore store;
  CpuSampler sampler(store, store.Register("cpu_time", "ns", ""));
  ASSERT_FALSE(testing::HasThreadNamed("dc-cpu-sampler"));
  sampler.Start(1000000);
  ASSERT_TRUE(sampler.running());
  EXPECT_TRUE(testing::WaitForThreadNamed("dc-cpu-sampler"));
  sampler.Stop();
  EXPECT_TRUE(testing::WaitForNoThreadNamed("dc-cpu-sampler"));
}

TEST(CpuSampler, ChargesNothingWhilePaused) {
  MetricStore store;
  const MetricId cpu = store.Register("cpu_time", "ns", "");
  CpuSampler sampler(store, cpu);
  auto thread = sampler.RegisterCurrentThread(/*outside_ops=*/5);
  ASSERT_NE(thread, nullptr);
  sampler.SetPaused(true);
  Spin(3000000);
  sampler.SampleAll();
  EXPECT_TRUE(CpuByContext(store).empty());
  // What was used while paused is not charged later either.
  sampler.SetPaused(false);
  Spin(2000000);
  sampler.SampleAll();
  const double charged = CpuByContext(store)[5];
  EXPECT_GE(charged, 2000000);
  EXPECT_LT(charged, 3000000);
  sampler.Unregister(thread);
}

TEST(CpuSampler, ChargesEachTicksCpuToTheCurrentOp) {
  MetricStore store;
  const MetricId cpu = store.Register("cpu_time", "ns", "");
  CpuSampler sampler(store, cpu);
  sampler.Start(1000000);
  ASSERT_TRUE(sampler.running());
  // Registering reads the thread's clock first, then opens its counters:
  // that CPU is charged too, and under an emulator it can take
  // milliseconds, so the upper bound counts from before it.
  const int64_t before_register = ThreadCpuNs();
  auto thread = sampler.RegisterCurrentThread(/*outside_ops=*/5);
  ASSERT_NE(thread, nullptr);
  const int64_t begin = ThreadCpuNs();
  thread->current.store(10);
  Spin(80000000);
  thread->current.store(11);
  Spin(80000000);
  thread->current.store(0);
  Spin(40000000);
  const int64_t used = ThreadCpuNs() - begin;
  sampler.Stop();
  // Stop's own CPU is charged too (the last sample comes at its end).
  const int64_t used_with_register_and_stop = ThreadCpuNs() - before_register;
  EXPECT_FALSE(sampler.running());
  auto by_context = CpuByContext(store);
  // Every nanosecond the thread used is charged somewhere, and nothing
  // it did not use; the split is statistical, so only roughly checked.
  const double total = by_context[5] + by_context[10] + by_context[11];
  EXPECT_GE(total, used);
  EXPECT_LE(total, used_with_register_and_stop);
  EXPECT_GT(by_context[10], 40000000);
  EXPECT_GT(by_context[11], 40000000);
  EXPECT_GT(by_context[5], 15000000);  // outside ops: the thread's node
}

TEST(CpuSampler, ThreadsThatExitAreSampledOnceMoreAndForgotten) {
  MetricStore store;
  const MetricId cpu = store.Register("cpu_time", "ns", "");
  CpuSampler sampler(store, cpu);
  sampler.Start(1000000);
  std::thread worker([&sampler] {
    auto me = sampler.RegisterCurrentThread(7);
    me->current.store(8);
    Spin(20000000);
    sampler.Unregister(me);
    sampler.Unregister(me);  // twice is harmless
  });
  worker.join();
  sampler.SampleAll();  // the exited thread is not read again
  sampler.Stop();
  auto by_context = CpuByContext(store);
  EXPECT_GE(by_context[7] + by_context[8], 20000000);
  EXPECT_GT(by_context[8], 10000000);
}

TEST(CpuSampler, NothingIsChargedBeforeStart) {
  MetricStore store;
  const MetricId cpu = store.Register("cpu_time", "ns", "");
  CpuSampler sampler(store, cpu);
  auto thread = sampler.RegisterCurrentThread(5);
  thread->current.store(10);
  Spin(10000000);  // not running: Start() restarts every thread's count
  // Only the CPU this thread uses from Start() to Stop() may be charged.
  // That is not zero (and under an emulator, which translates code on
  // first use, it can be several milliseconds), so it is measured.
  const int64_t before = ThreadCpuNs();
  sampler.Start(1000000);
  sampler.Stop();
  const int64_t used = ThreadCpuNs() - before;
  auto by_context = CpuByContext(store);
  EXPECT_LE(by_context[10] + by_context[5], used + 1000000);
  sampler.Stop();  // stopping twice is harmless
}

TEST(CpuSampler, StopDoesNotWaitOutTheInterval) {
  MetricStore store;
  CpuSampler sampler(store, store.Register("cpu_time", "ns", ""));
  auto thread = sampler.RegisterCurrentThread(5);
  // An hour between ticks: a Stop() that waited for the next tick would
  // outlast the test's time limit.
  sampler.Start(int64_t{3600} * 1000000000);
  ASSERT_TRUE(sampler.running());
  ASSERT_TRUE(testing::WaitForThreadNamed("dc-cpu-sampler"));
  Spin(2000000);
  sampler.Stop();
  EXPECT_FALSE(sampler.running());
  // The last sample is still taken.
  EXPECT_GT(CpuByContext(store)[5], 0);
}

// A tick hook that holds the sampling thread inside its first tick until
// released, so that Stop() calls meet a thread that cannot end yet.
struct HeldTick {
  std::mutex mutex;
  std::condition_variable changed;
  bool entered = false;
  bool released = false;

  static void Run(void* self) {
    auto* held = static_cast<HeldTick*>(self);
    std::unique_lock<std::mutex> lock(held->mutex);
    held->entered = true;
    held->changed.notify_all();
    held->changed.wait(lock, [held] { return held->released; });
  }
  void WaitEntered() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [this] { return entered; });
  }
  void Release() {
    std::lock_guard<std::mutex> guard(mutex);
    released = true;
    changed.notify_all();
  }
};

TEST(CpuSampler, OfTwoStopsAtOnceOneJoinsAndTheOtherReturns) {
  MetricStore store;
  HeldTick held;
  CpuSampler sampler(store, store.Register("cpu_time", "ns", ""),
                     CpuSampler::TickHook{&HeldTick::Run, &held});
  sampler.Start(100000);
  held.WaitEntered();
  // Whichever Stop() comes second returns while the first still joins the
  // held thread, and only then lets it go: two Stop()s that both waited for
  // the thread would never return.
  std::atomic<int> returned{0};
  auto stop = [&] {
    sampler.Stop();
    returned.fetch_add(1);
    held.Release();
  };
  std::thread first(stop), second(stop);
  first.join();
  second.join();
  EXPECT_EQ(returned.load(), 2);
  EXPECT_FALSE(sampler.running());
  EXPECT_TRUE(testing::WaitForNoThreadNamed("dc-cpu-sampler"));
  // Stopped is idle again: it starts anew.
  sampler.Start(100000);
  EXPECT_TRUE(sampler.running());
  sampler.Stop();
  EXPECT_FALSE(sampler.running());
}

TEST(CpuSampler, ExitHandlersIgnoreADestroyedSampler) {
  MetricStore store;
  const MetricId cpu = store.Register("cpu_time", "ns", "");
  auto owned = std::make_unique<CpuSampler>(store, cpu);
  std::shared_ptr<CpuSampler::Thread> thread = owned->RegisterCurrentThread(5);
  // Kept as a number, as a thread-exit handler holds it: the compiler would
  // (rightly) reject passing a freed pointer otherwise.
  volatile uintptr_t gone = reinterpret_cast<uintptr_t>(owned.get());
  owned.reset();
  CpuSampler::UnregisterIfAlive(reinterpret_cast<CpuSampler*>(gone), thread);
  CpuSampler live(store, cpu);
  auto mine = live.RegisterCurrentThread(5);
  CpuSampler::UnregisterIfAlive(&live, mine);
  live.Start(1000000);
  live.Stop();
  EXPECT_TRUE(CpuByContext(store).empty());  // unregistered: never sampled
}

}  // namespace
}  // namespace deepcontext::profiler
