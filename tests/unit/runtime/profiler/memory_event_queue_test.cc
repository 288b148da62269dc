#include "runtime/profiler/memory_event_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace deepcontext::profiler {
namespace {

MemoryEvent EventNumber(uint64_t n, int32_t device = 0) {
  return MemoryEvent{0x1000 + n, static_cast<int64_t>(n), n, device, 0};
}

TEST(MemoryEventQueue, EventsComeOutInTheOrderTheyWentIn) {
  MemoryEventQueue queue;
  uint64_t next_in = 0, next_out = 0;
  // Several laps of the ring, drained at uneven points.
  for (int round = 0; round < 7; ++round) {
    const uint64_t batch = 1 + (1000 + 777 * round) % MemoryEventQueue::kCapacity;
    for (uint64_t i = 0; i < batch; ++i) ASSERT_TRUE(queue.TryPush(EventNumber(next_in++)));
    const size_t drained = queue.Drain([&](const MemoryEvent& event) {
      EXPECT_EQ(event.context, next_out);
      EXPECT_EQ(event.address, 0x1000 + next_out);
      EXPECT_EQ(event.bytes, static_cast<int64_t>(next_out));
      ++next_out;
    });
    EXPECT_EQ(drained, batch);
  }
  EXPECT_EQ(next_out, next_in);
  EXPECT_EQ(queue.Drain([](const MemoryEvent&) {}), 0u);
}

TEST(MemoryEventQueue, AFullQueueRefusesUntilDrained) {
  MemoryEventQueue queue;
  for (uint64_t i = 0; i < MemoryEventQueue::kCapacity; ++i) {
    ASSERT_TRUE(queue.TryPush(EventNumber(i)));
  }
  EXPECT_FALSE(queue.TryPush(EventNumber(99999)));
  uint64_t first = ~uint64_t{0};
  size_t seen = 0;
  queue.Drain([&](const MemoryEvent& event) {
    if (seen++ == 0) first = event.context;
  });
  EXPECT_EQ(seen, MemoryEventQueue::kCapacity);
  EXPECT_EQ(first, 0u);  // the refused event took no place
  EXPECT_TRUE(queue.TryPush(EventNumber(5)));
}

TEST(MemoryEventQueue, ResetForgetsQueuedEvents) {
  MemoryEventQueue queue;
  for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(queue.TryPush(EventNumber(i)));
  queue.Reset();
  EXPECT_EQ(queue.Drain([](const MemoryEvent&) {}), 0u);
  ASSERT_TRUE(queue.TryPush(EventNumber(42)));
  uint64_t context = 0;
  EXPECT_EQ(queue.Drain([&](const MemoryEvent& event) { context = event.context; }), 1u);
  EXPECT_EQ(context, 42u);
}

// Producers on several threads, a consumer draining meanwhile: every event
// arrives once, and each thread's events in the order it pushed them.
TEST(MemoryEventQueue, ConcurrentProducersKeepTheirOwnOrder) {
  MemoryEventQueue queue;
  constexpr int kThreads = 4;
  constexpr uint64_t kEvents = 50000;
  std::atomic<int> running{kThreads};
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&queue, &running, t] {
      for (uint64_t i = 0; i < kEvents; ++i) {
        while (!queue.TryPush(EventNumber(i, t))) std::this_thread::yield();
      }
      running.fetch_sub(1);
    });
  }
  std::vector<uint64_t> next(kThreads, 0);
  bool in_order = true;
  auto take = [&](const MemoryEvent& event) {
    in_order = in_order && event.context == next[event.device];
    ++next[event.device];
  };
  while (running.load() > 0) queue.Drain(take);
  for (std::thread& producer : producers) producer.join();
  queue.Drain(take);
  EXPECT_TRUE(in_order);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(next[t], kEvents) << t;
}

}  // namespace
}  // namespace deepcontext::profiler
