#include "runtime/profiler/op_metrics.h"

#include <gtest/gtest.h>

#include <time.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

namespace deepcontext::profiler {
namespace {

void Spin(int64_t ns) {
  timespec start, now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  do {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000000000 + (now.tv_nsec - start.tv_nsec) < ns);
}

// `thread`: the framework's id of the thread that started the op.
void Send(OpMetrics& metrics, uint64_t op_id, dlmonitor_phase_t phase,
          dlmonitor_context_t context,
          dlmonitor_op_kind_t kind = DLMONITOR_OP_OPERATOR, uint64_t thread = 0) {
  dlmonitor_op_data_t op{};
  op.struct_size = sizeof(op);
  op.kind = kind;
  op.name = "op";
  op.op_id = op_id;
  op.thread_id = thread;
  dlmonitor_event_t event{};
  event.struct_size = sizeof(event);
  event.domain = DLMONITOR_DOMAIN_FRAMEWORK_OP;
  event.phase = phase;
  event.op = &op;
  event.context = context;
  OpMetrics::OnEvent(&event, &metrics);
}

// What the store holds now.
std::map<std::pair<ContextId, std::string>, Accumulator> CollectUnflushed(
    const MetricStore& store) {
  std::map<std::pair<ContextId, std::string>, Accumulator> out;
  auto metrics = store.Metrics();
  store.ForEach(100, [&](ContextId c, MetricId m, const Accumulator& a) {
    out[{c, metrics[m].name}] = a;
  });
  return out;
}

// What the store holds once the ops finished so far are in it.
std::map<std::pair<ContextId, std::string>, Accumulator> Collect(
    OpMetrics& metrics, const MetricStore& store) {
  metrics.Flush();
  return CollectUnflushed(store);
}

TEST(OpMetrics, SamplesCpuTimeByDefault) {
  MetricStore store;
  OpMetrics metrics(store);
  EXPECT_EQ(metrics.cpu_time_mode(), OpMetrics::CpuTimeMode::kSampled);
}

TEST(OpMetrics, RecordsExclusiveTimeAndCalls) {
  MetricStore store;
  OpMetrics metrics(store);
  metrics.SetCpuTimeMode(OpMetrics::CpuTimeMode::kExact);
  Send(metrics, 1, DLMONITOR_PHASE_ENTER, 10);
  Spin(2000000);
  Send(metrics, 2, DLMONITOR_PHASE_ENTER, 11);
  Spin(6000000);
  Send(metrics, 2, DLMONITOR_PHASE_EXIT, 11);
  Send(metrics, 1, DLMONITOR_PHASE_EXIT, 10);
  auto values = Collect(metrics, store);
  EXPECT_EQ(values[std::make_pair(ContextId{10}, std::string("calls"))].sum, 1);
  EXPECT_EQ(values[std::make_pair(ContextId{11}, std::string("calls"))].sum, 1);
  const double outer = values[std::make_pair(ContextId{10}, std::string("cpu_time"))].sum;
  const double inner = values[std::make_pair(ContextId{11}, std::string("cpu_time"))].sum;
  // The outer op's own time excludes the 6 ms of its child.
  EXPECT_GE(inner, 6000000);
  EXPECT_GE(outer, 2000000);
  EXPECT_LT(outer, inner);
  EXPECT_GE(values[std::make_pair(ContextId{11}, std::string("wall_time"))].sum, inner * 0.5);
}

TEST(OpMetrics, ExitContextWinsAndWrappersAreNotCalls) {
  MetricStore store;
  OpMetrics metrics(store);
  metrics.SetCpuTimeMode(OpMetrics::CpuTimeMode::kExact);
  // A wrapper entered without context learns it at exit.
  Send(metrics, 1, DLMONITOR_PHASE_ENTER, 0, DLMONITOR_OP_BACKWARD_WRAPPER);
  Send(metrics, 1, DLMONITOR_PHASE_EXIT, 20, DLMONITOR_OP_BACKWARD_WRAPPER);
  auto values = Collect(metrics, store);
  EXPECT_EQ(values.count(std::make_pair(ContextId{20}, std::string("calls"))), 0u);
  EXPECT_EQ(values[std::make_pair(ContextId{20}, std::string("cpu_time"))].count, 1u);
}

TEST(OpMetrics, ExitWithoutEnterIsIgnored) {
  MetricStore store;
  OpMetrics metrics(store);
  Send(metrics, 5, DLMONITOR_PHASE_EXIT, 30);
  EXPECT_TRUE(Collect(metrics, store).empty());
}

TEST(OpMetrics, WithoutCpuTimeOpsKeepCallsAndExclusiveWallTime) {
  MetricStore store;
  OpMetrics metrics(store);
  metrics.SetCpuTimeMode(OpMetrics::CpuTimeMode::kOff);
  EXPECT_EQ(metrics.cpu_time_mode(), OpMetrics::CpuTimeMode::kOff);
  const auto outer_start = std::chrono::steady_clock::now();
  Send(metrics, 1, DLMONITOR_PHASE_ENTER, 10);
  Send(metrics, 2, DLMONITOR_PHASE_ENTER, 11);
  Spin(2000000);
  Send(metrics, 2, DLMONITOR_PHASE_EXIT, 11);
  Send(metrics, 1, DLMONITOR_PHASE_EXIT, 10);
  const double outer_inclusive =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - outer_start)
          .count();
  auto values = Collect(metrics, store);
  EXPECT_EQ(values.count({10, "cpu_time"}), 0u);
  EXPECT_EQ(values.count({11, "cpu_time"}), 0u);
  EXPECT_EQ((values[{10, "calls"}].sum), 1);
  EXPECT_EQ((values[{11, "calls"}].sum), 1);
  const double child_wall = values[{11, "wall_time"}].sum;
  EXPECT_GE(child_wall, 2000000);
  // The child's excluded: the parent keeps what is left of the time both took.
  // Compared with the time measured around them rather than a fixed bound,
  // because a busy machine can preempt the parent for milliseconds; the
  // slack (half the child) covers clock calibration only.
  EXPECT_LE((values[{10, "wall_time"}].sum) + child_wall, outer_inclusive + child_wall / 2);

  metrics.SetCpuTimeMode(OpMetrics::CpuTimeMode::kExact);  // for ops entered afterwards
  Send(metrics, 3, DLMONITOR_PHASE_ENTER, 12);
  Spin(1000000);
  Send(metrics, 3, DLMONITOR_PHASE_EXIT, 12);
  EXPECT_GE((Collect(metrics, store)[{12, "cpu_time"}].sum), 1000000);
}

TEST(OpMetrics, FinishedOpsReachTheStoreWhenFlushed) {
  MetricStore store;
  OpMetrics metrics(store);
  metrics.SetCpuTimeMode(OpMetrics::CpuTimeMode::kOff);  // no sampling thread
  Send(metrics, 1, DLMONITOR_PHASE_ENTER, 10);
  Send(metrics, 1, DLMONITOR_PHASE_EXIT, 10);
  // Kept in the thread's log, off the op's path, until a drain.
  EXPECT_TRUE(CollectUnflushed(store).empty());
  metrics.Flush();
  EXPECT_EQ((CollectUnflushed(store)[{10, "calls"}].sum), 1);
  metrics.Flush();  // nothing twice
  EXPECT_EQ((CollectUnflushed(store)[{10, "calls"}].count), 1u);
}

TEST(OpMetrics, AFullLogIsAddedByItsThread) {
  MetricStore store;
  OpMetrics metrics(store);
  metrics.SetCpuTimeMode(OpMetrics::CpuTimeMode::kOff);  // nothing drains it
  const uint64_t ops = 3 * OpSampleRing::kCapacity + 7;
  for (uint64_t i = 1; i <= ops; ++i) {
    Send(metrics, i, DLMONITOR_PHASE_ENTER, 10 + i % 3);
    Send(metrics, i, DLMONITOR_PHASE_EXIT, 10 + i % 3);
  }
  // All but the last ring's worth are in the store already.
  double stored = 0;
  for (const auto& [key, value] : CollectUnflushed(store)) {
    if (key.second == "calls") stored += value.sum;
  }
  EXPECT_GE(stored, static_cast<double>(ops - OpSampleRing::kCapacity));
  EXPECT_LT(stored, static_cast<double>(ops));
  double calls = 0;
  for (const auto& [key, value] : Collect(metrics, store)) {
    if (key.second == "calls") calls += value.sum;
  }
  EXPECT_EQ(calls, static_cast<double>(ops));
}

TEST(OpMetrics, TheSamplingThreadDrainsTheLogs) {
  MetricStore store;
  OpMetrics metrics(store);  // sampled CPU time: a sampling thread ticks
  Send(metrics, 1, DLMONITOR_PHASE_ENTER, 10);
  Send(metrics, 1, DLMONITOR_PHASE_EXIT, 10);
  // Within a few ticks (1 ms each), with no Flush from here.
  for (int i = 0; i < 5000 && CollectUnflushed(store).count({10, "calls"}) == 0; ++i) {
    timespec pause{0, 1000000};
    nanosleep(&pause, nullptr);
  }
  EXPECT_EQ((CollectUnflushed(store)[{10, "calls"}].sum), 1);
  metrics.StopSampling();
}

// Other work that may wait a tick runs on the sampler's thread after it.
TEST(OpMetrics, TheTickRunsTheExtraHook) {
  MetricStore store;
  std::atomic<int> ticks{0};
  OpMetrics metrics(store, CpuSampler::TickHook{
                               [](void* arg) { static_cast<std::atomic<int>*>(arg)->fetch_add(1); },
                               &ticks});
  Send(metrics, 1, DLMONITOR_PHASE_ENTER, 10);  // starts the sampler
  Send(metrics, 1, DLMONITOR_PHASE_EXIT, 10);
  for (int i = 0; i < 5000 && ticks.load() == 0; ++i) {
    timespec pause{0, 1000000};
    nanosleep(&pause, nullptr);
  }
  EXPECT_GT(ticks.load(), 0);
  metrics.StopSampling();
}

// A stopped sampler (a session's stop, a switch away from sampled CPU time)
// starts again at the next op in sampled mode, on a thread whose ops ran
// while it was running as on a new one.
TEST(OpMetrics, TheSamplerStartsAgainAfterAStop) {
  MetricStore store;
  OpMetrics metrics(store);
  Send(metrics, 1, DLMONITOR_PHASE_ENTER, 10);
  Send(metrics, 1, DLMONITOR_PHASE_EXIT, 10);
  EXPECT_TRUE(metrics.sampler().running());
  metrics.StopSampling();
  EXPECT_FALSE(metrics.sampler().running());
  Send(metrics, 2, DLMONITOR_PHASE_ENTER, 10);
  EXPECT_TRUE(metrics.sampler().running());
  Send(metrics, 2, DLMONITOR_PHASE_EXIT, 10);

  metrics.SetCpuTimeMode(OpMetrics::CpuTimeMode::kOff);
  EXPECT_FALSE(metrics.sampler().running());
  Send(metrics, 3, DLMONITOR_PHASE_ENTER, 10);
  Send(metrics, 3, DLMONITOR_PHASE_EXIT, 10);
  EXPECT_FALSE(metrics.sampler().running());
  metrics.SetCpuTimeMode(OpMetrics::CpuTimeMode::kSampled);
  Send(metrics, 4, DLMONITOR_PHASE_ENTER, 10);
  EXPECT_TRUE(metrics.sampler().running());
  Send(metrics, 4, DLMONITOR_PHASE_EXIT, 10);
  metrics.StopSampling();
}

TEST(OpMetrics, AScopeEndedOnAnotherThreadGetsItsCallAndWallTime) {
  MetricStore store;
  OpMetrics metrics(store);
  metrics.SetCpuTimeMode(OpMetrics::CpuTimeMode::kExact);
  constexpr uint64_t kThisThread = 3;
  const auto before_entry = std::chrono::steady_clock::now();
  Send(metrics, 1, DLMONITOR_PHASE_ENTER, 10, DLMONITOR_OP_USER_SCOPE, kThisThread);
  Send(metrics, 2, DLMONITOR_PHASE_ENTER, 11, DLMONITOR_OP_OPERATOR, kThisThread);
  Spin(2000000);
  std::thread([&] {
    Send(metrics, 1, DLMONITOR_PHASE_EXIT, 0, DLMONITOR_OP_USER_SCOPE, kThisThread);
  }).join();
  // Wall time, not CPU time: on a loaded machine the spin and the thread
  // take longer than the CPU they use.
  const int64_t until_ended = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::steady_clock::now() - before_entry)
                                  .count();
  // Closed here at this thread's next op, which it does not end: op 2,
  // entered above it, is still open and then ends normally.
  Spin(20000000);
  Send(metrics, 2, DLMONITOR_PHASE_EXIT, 11, DLMONITOR_OP_OPERATOR, kThisThread);
  auto values = Collect(metrics, store);
  EXPECT_EQ((values[{10, "calls"}].sum), 1);
  EXPECT_EQ((values[{11, "calls"}].sum), 1);
  EXPECT_EQ(values.count({10, "cpu_time"}), 0u);
  // Until its end elsewhere, not until this thread took it.
  EXPECT_GE((values[{10, "wall_time"}].sum), 2000000);
  // (1 % for a counter's calibrated rate.)
  EXPECT_LE((values[{10, "wall_time"}].sum), until_ended + until_ended / 100);
  EXPECT_GE((values[{11, "cpu_time"}].sum), 22000000);
  // Ops after it are no longer inside it: its time is not cut by theirs.
  Send(metrics, 4, DLMONITOR_PHASE_ENTER, 12, DLMONITOR_OP_OPERATOR, kThisThread);
  Send(metrics, 4, DLMONITOR_PHASE_EXIT, 12, DLMONITOR_OP_OPERATOR, kThisThread);
  EXPECT_EQ((Collect(metrics, store)[{12, "calls"}].sum), 1);
}

TEST(OpMetrics, AnExitOfAnOpNeverEnteredAnywhereIsDropped) {
  MetricStore store;
  OpMetrics metrics(store);
  metrics.SetCpuTimeMode(OpMetrics::CpuTimeMode::kOff);
  std::thread([&] {
    Send(metrics, 7, DLMONITOR_PHASE_EXIT, 0, DLMONITOR_OP_USER_SCOPE, /*thread=*/3);
  }).join();
  Send(metrics, 8, DLMONITOR_PHASE_ENTER, 13, DLMONITOR_OP_OPERATOR, 3);
  Send(metrics, 8, DLMONITOR_PHASE_EXIT, 13, DLMONITOR_OP_OPERATOR, 3);
  const auto values = Collect(metrics, store);
  EXPECT_EQ(values.size(), 2u);  // op 8's calls and wall_time
  EXPECT_EQ((values.at({13, "calls"}).sum), 1);
}

TEST(OpMetrics, OpsOfAnExitedThreadAreKept) {
  MetricStore store;
  OpMetrics metrics(store);
  metrics.SetCpuTimeMode(OpMetrics::CpuTimeMode::kOff);
  std::thread worker([&] {
    for (uint64_t i = 1; i <= 5; ++i) {
      Send(metrics, i, DLMONITOR_PHASE_ENTER, 40);
      Send(metrics, i, DLMONITOR_PHASE_EXIT, 40);
    }
  });
  worker.join();
  EXPECT_EQ((Collect(metrics, store)[{40, "calls"}].sum), 5);
}

TEST(OpMetrics, AForkedChildForgetsTheParentsFinishedOps) {
  MetricStore store;
  OpMetrics metrics(store);
  metrics.SetCpuTimeMode(OpMetrics::CpuTimeMode::kOff);
  Send(metrics, 1, DLMONITOR_PHASE_ENTER, 10);
  Send(metrics, 1, DLMONITOR_PHASE_EXIT, 10);
  // As Session::AfterForkInChild does, without forking the test runner.
  store.Clear(100);
  metrics.ResetAfterFork();
  Send(metrics, 2, DLMONITOR_PHASE_ENTER, 11);
  Send(metrics, 2, DLMONITOR_PHASE_EXIT, 11);
  const auto values = Collect(metrics, store);
  EXPECT_EQ(values.count({10, "calls"}), 0u);
  EXPECT_EQ(values.count({11, "calls"}), 1u);
}

}  // namespace
}  // namespace deepcontext::profiler
