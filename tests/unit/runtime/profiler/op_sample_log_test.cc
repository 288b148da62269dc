#include "runtime/profiler/op_sample_log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace deepcontext::profiler {
namespace {

OpSample SampleOf(ContextId context) {
  OpSample sample;
  sample.context = context;
  sample.wall_ticks = static_cast<int64_t>(context) * 10;
  return sample;
}

std::vector<ContextId> DrainContexts(OpSampleRing& ring) {
  std::vector<ContextId> out;
  ring.Drain([&](const OpSample& sample) { out.push_back(sample.context); });
  return out;
}

TEST(OpSampleRing, DrainsInOrderAndRefusesWhenFull) {
  OpSampleRing ring;
  for (ContextId c = 1; c <= OpSampleRing::kCapacity; ++c) {
    ASSERT_TRUE(ring.TryPush(SampleOf(c)));
  }
  EXPECT_FALSE(ring.TryPush(SampleOf(9999)));
  const std::vector<ContextId> drained = DrainContexts(ring);
  ASSERT_EQ(drained.size(), OpSampleRing::kCapacity);
  for (size_t i = 0; i < drained.size(); ++i) EXPECT_EQ(drained[i], i + 1);
  // Room again, and the positions wrap around.
  EXPECT_TRUE(ring.TryPush(SampleOf(7)));
  EXPECT_EQ(DrainContexts(ring), std::vector<ContextId>{7});
  EXPECT_TRUE(DrainContexts(ring).empty());
}

TEST(OpSampleRing, AConcurrentDrainerSeesEverySampleOnce) {
  OpSampleRing ring;
  constexpr ContextId kSamples = 200000;
  std::atomic<bool> done{false};
  std::vector<ContextId> seen;
  std::thread drainer([&] {
    auto take = [&](const OpSample& sample) {
      EXPECT_EQ(sample.wall_ticks, static_cast<int64_t>(sample.context) * 10);
      seen.push_back(sample.context);
    };
    while (!done.load(std::memory_order_acquire)) ring.Drain(take);
    ring.Drain(take);
  });
  for (ContextId c = 1; c <= kSamples; ++c) {
    while (!ring.TryPush(SampleOf(c))) std::this_thread::yield();
  }
  done.store(true, std::memory_order_release);
  drainer.join();
  ASSERT_EQ(seen.size(), kSamples);
  for (ContextId i = 0; i < kSamples; ++i) ASSERT_EQ(seen[i], i + 1);
}

TEST(OpSampleLog, DropsOrphanedRingsOnceDrained) {
  OpSampleLog log;
  std::shared_ptr<OpSampleRing> kept = log.Register();
  std::shared_ptr<OpSampleRing> gone = log.Register();
  ASSERT_TRUE(kept->TryPush(SampleOf(1)));
  ASSERT_TRUE(gone->TryPush(SampleOf(2)));
  gone->Orphan();
  std::vector<ContextId> drained;
  log.DrainAll([&](const OpSample& sample) { drained.push_back(sample.context); });
  EXPECT_EQ(drained, (std::vector<ContextId>{1, 2}));  // the orphan's too
  EXPECT_EQ(log.rings(), 1u);
  log.ResetAfterFork();
  EXPECT_EQ(log.rings(), 0u);
  EXPECT_EQ(log.Register() != nullptr, true);
  EXPECT_EQ(log.rings(), 1u);
}

}  // namespace
}  // namespace deepcontext::profiler
