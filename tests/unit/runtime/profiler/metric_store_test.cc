#include "runtime/profiler/metric_store.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>
#include <vector>

namespace deepcontext::profiler {
namespace {

TEST(MetricStore, RegisterIsIdempotentByName) {
  MetricStore store;
  MetricId a = store.Register("cpu_time", "ns", "x");
  MetricId b = store.Register("calls", "count", "y");
  EXPECT_NE(a, b);
  EXPECT_EQ(store.Register("cpu_time", "ns", "other"), a);
  ASSERT_EQ(store.Metrics().size(), 2u);
  EXPECT_EQ(store.Metrics()[b].unit, "count");
}

TEST(MetricStore, AggregatesCountSumMinMax) {
  MetricStore store;
  MetricId m = store.Register("t", "ns", "");
  store.Add(7, m, 5);
  store.Add(7, m, 2);
  store.Add(7, m, 9);
  store.Add(9000, m, 1);  // far id: another chunk
  std::map<ContextId, Accumulator> seen;
  store.ForEach(10000, [&](ContextId c, MetricId id, const Accumulator& a) {
    EXPECT_EQ(id, m);
    seen[c] = a;
  });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[7].count, 3u);
  EXPECT_EQ(seen[7].sum, 16);
  EXPECT_EQ(seen[7].min, 2);
  EXPECT_EQ(seen[7].max, 9);
  EXPECT_EQ(seen[9000].count, 1u);
}

TEST(MetricStore, ConcurrentAddsAreAllCounted) {
  MetricStore store;
  MetricId calls = store.Register("calls", "count", "");
  MetricId time = store.Register("time", "ns", "");
  constexpr int kThreads = 8, kAdds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAdds; ++i) {
        store.Add(1 + i % 10, calls, 1);
        store.Add(1 + i % 10, time, t + 1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  double total_calls = 0, total_time = 0;
  uint64_t samples = 0;
  store.ForEach(100, [&](ContextId, MetricId id, const Accumulator& a) {
    if (id == calls) {
      total_calls += a.sum;
      samples += a.count;
    } else {
      total_time += a.sum;
      EXPECT_EQ(a.min, 1);
      EXPECT_EQ(a.max, kThreads);
    }
  });
  EXPECT_EQ(total_calls, kThreads * kAdds);
  EXPECT_EQ(samples, static_cast<uint64_t>(kThreads * kAdds));
  EXPECT_EQ(total_time, kAdds * (kThreads * (kThreads + 1) / 2));
}

TEST(MetricStore, ClearDropsSamplesButKeepsMetrics) {
  MetricStore store;
  MetricId m = store.Register("t", "ns", "");
  store.Add(3, m, 1);
  store.Clear(100);
  int visits = 0;
  store.ForEach(100, [&](ContextId, MetricId, const Accumulator&) { ++visits; });
  EXPECT_EQ(visits, 0);
  EXPECT_EQ(store.Metrics().size(), 1u);
}

}  // namespace
}  // namespace deepcontext::profiler

namespace deepcontext::profiler {
namespace {

TEST(MetricStoreBatch, AddsEachSampleOfABatchToItsMetric) {
  MetricStore store;
  const MetricId a = store.Register("a", "ns", "");
  const MetricId b = store.Register("b", "ns", "");
  store.Add(3, {{a, 1.5}, {b, 4}});
  store.Add(3, {{a, 2.5}});
  std::map<MetricId, Accumulator> seen;
  store.ForEach(8, [&](ContextId context, MetricId metric, const Accumulator& value) {
    EXPECT_EQ(context, 3u);
    seen[metric] = value;
  });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[a].count, 2u);
  EXPECT_EQ(seen[a].sum, 4);
  EXPECT_EQ(seen[b].count, 1u);
  EXPECT_EQ(seen[b].max, 4);
}

TEST(MetricStoreGauge, SetReplacesAndRemoveForgets) {
  MetricStore store;
  const MetricId gauge = store.Register("gauge", "bytes", "");
  store.Set(2, gauge, 10);
  store.Set(2, gauge, 7);
  int visits = 0;
  store.ForEach(8, [&](ContextId, MetricId, const Accumulator& value) {
    ++visits;
    EXPECT_EQ(value.count, 1u);
    EXPECT_EQ(value.sum, 7);
  });
  EXPECT_EQ(visits, 1);
  store.Remove(2, gauge);
  store.Remove(5, gauge);  // never set: no effect
  store.ForEach(8, [&](ContextId, MetricId, const Accumulator&) { ++visits; });
  EXPECT_EQ(visits, 1);
}

TEST(MetricStoreGauge, MergedAccumulatorsMatchAddingOneByOne) {
  Accumulator one_by_one;
  Accumulator first;
  Accumulator second;
  for (double value : {5.0, -2.0, 9.0}) {
    one_by_one.Add(value);
    first.Add(value);
  }
  for (double value : {12.0, -7.0}) {
    one_by_one.Add(value);
    second.Add(value);
  }
  Accumulator merged;
  merged.Merge(Accumulator{});  // an empty one changes nothing
  merged.Merge(first);
  merged.Merge(second);
  EXPECT_EQ(merged.count, one_by_one.count);
  EXPECT_EQ(merged.sum, one_by_one.sum);
  EXPECT_EQ(merged.min, -7);
  EXPECT_EQ(merged.max, 12);

  MetricStore store;
  const MetricId metric = store.Register("bytes", "bytes", "");
  store.Add(3, metric, 1);
  store.Set(3, metric, merged);
  store.ForEach(8, [&](ContextId, MetricId, const Accumulator& value) {
    EXPECT_EQ(value.count, 5u);
    EXPECT_EQ(value.sum, 17);
  });
}

}  // namespace
}  // namespace deepcontext::profiler
