#include "runtime/gpu/correlation_slots.h"

#include <gtest/gtest.h>

namespace deepcontext::gpu {
namespace {

// The id of the `local`-th id of shard `shard` (CorrelationShards).
uint64_t IdOf(uint64_t local, uint64_t shard = 0) {
  constexpr int kBlock = CorrelationShards::kBlockLog2;
  constexpr int kShards = CorrelationShards::kShardsLog2;
  return ((local >> kBlock) << (kBlock + kShards)) | (shard << kBlock) |
         (local & ((uint64_t{1} << kBlock) - 1));
}

CorrelationSlot& Insert(CorrelationSlots& slots, uint64_t id, ContextId context) {
  CorrelationSlot& slot = slots.FindOrInsert(id);
  EXPECT_EQ(slot.state, SlotState::kFree);
  EXPECT_EQ(slot.correlation_id, id);
  slot.launch.context = context;
  slot.state = SlotState::kLaunched;
  return slot;
}

TEST(CorrelationShardsTest, LocalIndicesOfAShardAreConsecutive) {
  for (uint64_t shard : {0u, 5u, 63u}) {
    for (uint64_t local = 0; local < 10000; ++local) {
      const uint64_t id = IdOf(local, shard);
      EXPECT_EQ(CorrelationShards::ShardOf(id), shard);
      EXPECT_EQ(CorrelationShards::LocalIndex(id), local);
    }
  }
}

TEST(CorrelationSlotsTest, IdsEqualModuloTheRingKeepTheirOwnEntries) {
  CorrelationSlots slots;
  slots.LimitRing(4);
  for (uint64_t local = 0; local < 12; ++local) Insert(slots, IdOf(local), 100 + local);
  EXPECT_EQ(slots.ring_capacity(), 4u);
  EXPECT_EQ(slots.size(), 12u);
  EXPECT_EQ(slots.overflow_size(), 8u);  // the ring keeps the newest
  for (uint64_t local = 0; local < 12; ++local) {
    CorrelationSlot* slot = slots.Find(IdOf(local));
    ASSERT_NE(slot, nullptr) << local;
    EXPECT_EQ(slot->launch.context, 100 + local);
  }
  EXPECT_EQ(slots.Find(IdOf(12)), nullptr);
  EXPECT_EQ(slots.Find(IdOf(0, 1)), nullptr);  // same index, other shard
  for (uint64_t local = 0; local < 12; local += 2) slots.Erase(*slots.Find(IdOf(local)));
  EXPECT_EQ(slots.size(), 6u);
  for (uint64_t local = 0; local < 12; ++local) {
    EXPECT_EQ(slots.Find(IdOf(local)) != nullptr, local % 2 == 1) << local;
  }
}

TEST(CorrelationSlotsTest, AnOlderIdArrivingLateGoesBesideTheNewer) {
  CorrelationSlots slots;
  slots.LimitRing(4);
  for (uint64_t local = 4; local < 8; ++local) Insert(slots, IdOf(local), local);
  Insert(slots, IdOf(0), 99);  // same slot as local 4, older
  EXPECT_EQ(slots.Find(IdOf(0))->launch.context, 99u);
  EXPECT_EQ(slots.Find(IdOf(4))->launch.context, 4u);
  // Its ring slot freed, the older id is still found where it went, not
  // inserted again.
  slots.Erase(*slots.Find(IdOf(4)));
  CorrelationSlot& again = slots.FindOrInsert(IdOf(0));
  EXPECT_EQ(again.launch.context, 99u);
  EXPECT_EQ(slots.size(), 4u);
}

TEST(CorrelationSlotsTest, RingGrowsToTheWindowOfWaitingIds) {
  CorrelationSlots slots;
  slots.LimitRing(1 << 14);
  for (uint64_t local = 0; local < 3000; ++local) Insert(slots, IdOf(local), local * 7);
  EXPECT_GE(slots.ring_capacity(), 4096u);
  EXPECT_LE(slots.ring_capacity(), 8192u);
  EXPECT_EQ(slots.overflow_size(), 0u);
  for (uint64_t local = 0; local < 3000; ++local) {
    CorrelationSlot* slot = slots.Find(IdOf(local));
    ASSERT_NE(slot, nullptr);
    EXPECT_EQ(slot->launch.context, local * 7);
    slots.Erase(*slot);
  }
  EXPECT_EQ(slots.size(), 0u);
}

TEST(CorrelationSlotsTest, AStragglerSpillsInsteadOfGrowingTheRing) {
  CorrelationSlots slots;
  slots.LimitRing(1 << 14);
  Insert(slots, IdOf(0), 1);  // its records never come
  // A window of 8 launches in flight moves through 100000 ids.
  for (uint64_t local = 1; local < 100000; ++local) {
    Insert(slots, IdOf(local), 2);
    if (local > 8) slots.Erase(*slots.Find(IdOf(local - 8)));
  }
  EXPECT_LE(slots.ring_capacity(), 64u);
  EXPECT_EQ(slots.overflow_size(), 1u);
  EXPECT_EQ(slots.Find(IdOf(0))->launch.context, 1u);
  EXPECT_EQ(slots.size(), 9u);
}

TEST(CorrelationSlotsTest, ManyStragglersStayOutOfTheRing) {
  CorrelationSlots slots;
  slots.LimitRing(1 << 14);
  // A window of 8 launches in flight; one launch in 8 never gets records.
  uint64_t stragglers = 0;
  for (uint64_t local = 0; local < 40000; ++local) {
    Insert(slots, IdOf(local), local);
    if (local >= 8 && (local - 8) % 8 != 0) slots.Erase(*slots.Find(IdOf(local - 8)));
    if (local % 8 == 0) ++stragglers;
  }
  EXPECT_LE(slots.ring_capacity(), 64u);
  EXPECT_EQ(slots.size(), stragglers + 7);
  for (uint64_t local = 0; local < 40000 - 8; local += 8) {
    ASSERT_NE(slots.Find(IdOf(local)), nullptr) << local;
    EXPECT_EQ(slots.Find(IdOf(local))->launch.context, local);
  }
}

TEST(CorrelationSlotsTest, SparseIdsGrowTheRingOnceSpilledIdsAreClaimed) {
  CorrelationSlots slots;
  slots.LimitRing(1 << 14);
  // One id in 8 of the shard is a launch (other API calls took the rest);
  // 1000 launches wait, spanning 8000 local ids, and are claimed in order.
  for (uint64_t k = 0; k < 1000; ++k) Insert(slots, IdOf(k * 8), k);
  for (uint64_t k = 1000; k < 5000; ++k) {
    Insert(slots, IdOf(k * 8), k);
    CorrelationSlot* oldest = slots.Find(IdOf((k - 1000) * 8));
    ASSERT_NE(oldest, nullptr) << k;
    EXPECT_EQ(oldest->launch.context, k - 1000);
    slots.Erase(*oldest);
  }
  EXPECT_GE(slots.ring_capacity(), 8192u);
  EXPECT_LE(slots.ring_capacity(), 16384u);
  EXPECT_EQ(slots.overflow_size(), 0u);
  EXPECT_EQ(slots.size(), 1000u);
  for (uint64_t k = 4000; k < 5000; ++k) EXPECT_EQ(slots.Find(IdOf(k * 8))->launch.context, k);
}

TEST(CorrelationSlotsTest, GrowingTakesSpilledEntriesBackIntoTheRing) {
  CorrelationSlots slots;
  slots.LimitRing(64);
  Insert(slots, IdOf(0), 1);
  // 32 apart: the same slot of the first ring (32), different ones after.
  Insert(slots, IdOf(32), 2);
  EXPECT_EQ(slots.ring_capacity(), 32u);
  EXPECT_EQ(slots.overflow_size(), 1u);
  for (uint64_t local = 1; local < 20; ++local) Insert(slots, IdOf(local), 3);
  // More than half full: the next collision grows the ring.
  Insert(slots, IdOf(33), 4);
  EXPECT_EQ(slots.ring_capacity(), 64u);
  EXPECT_EQ(slots.overflow_size(), 0u);
  EXPECT_EQ(slots.size(), 22u);
  EXPECT_EQ(slots.Find(IdOf(0))->launch.context, 1u);
  EXPECT_EQ(slots.Find(IdOf(32))->launch.context, 2u);
  EXPECT_EQ(slots.Find(IdOf(33))->launch.context, 4u);
}

TEST(CorrelationSlotsTest, EraseIfVisitsRingAndOverflow) {
  CorrelationSlots slots;
  slots.LimitRing(2);
  for (uint64_t local = 0; local < 6; ++local) Insert(slots, IdOf(local), local);
  size_t visited = 0;
  slots.ForEach([&](CorrelationSlot&) { ++visited; });
  EXPECT_EQ(visited, 6u);
  slots.EraseIf([](const CorrelationSlot& slot) { return slot.launch.context < 5; });
  EXPECT_EQ(slots.size(), 1u);
  EXPECT_EQ(slots.overflow_size(), 0u);
  EXPECT_NE(slots.Find(IdOf(5)), nullptr);
  // The overflow is empty again: a new id goes straight to its slot.
  Insert(slots, IdOf(4), 9);
  EXPECT_EQ(slots.Find(IdOf(4))->launch.context, 9u);
}

}  // namespace
}  // namespace deepcontext::gpu
