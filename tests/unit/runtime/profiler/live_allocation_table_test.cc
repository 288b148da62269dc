#include "runtime/profiler/live_allocation_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <utility>

namespace deepcontext::profiler {
namespace {

using Table = LiveAllocationTable<int64_t>;

TEST(LiveAllocationTableTest, FindsWhatWasInsertedPerDevice) {
  Table table;
  EXPECT_EQ(table.Find(0, 0x1000), nullptr);
  *table.Insert(0, 0x1000, 7) += 1;
  table.Insert(1, 0x1000, 9);   // same address, other device
  table.Insert(-1, 0x1000, 11);  // host
  ASSERT_NE(table.Find(0, 0x1000), nullptr);
  EXPECT_EQ(*table.Find(0, 0x1000), 8);
  EXPECT_EQ(*table.Find(1, 0x1000), 9);
  EXPECT_EQ(*table.Find(-1, 0x1000), 11);
  EXPECT_EQ(table.Find(2, 0x1000), nullptr);
  EXPECT_EQ(table.size(), 3u);
  table.Erase(table.Find(1, 0x1000));
  EXPECT_EQ(table.Find(1, 0x1000), nullptr);
  EXPECT_EQ(*table.Find(0, 0x1000), 8);
  EXPECT_EQ(*table.Find(-1, 0x1000), 11);
  EXPECT_EQ(table.size(), 2u);
}

TEST(LiveAllocationTableTest, GrowsAndKeepsEveryEntry) {
  Table table;
  constexpr int kCount = 20000;  // several doublings
  for (int i = 0; i < kCount; ++i) {
    table.Insert(i % 3, 0x7f0000000000 + uint64_t(i) * 512, i);
  }
  EXPECT_EQ(table.size(), size_t{kCount});
  EXPECT_GE(table.capacity(), size_t{2 * kCount});
  for (int i = 0; i < kCount; ++i) {
    const int64_t* value = table.Find(i % 3, 0x7f0000000000 + uint64_t(i) * 512);
    ASSERT_NE(value, nullptr) << i;
    EXPECT_EQ(*value, i);
  }
  EXPECT_EQ(table.Find(0, 0x7f0000000000 + 1), nullptr);
  table.Clear();
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.Find(0, 0x7f0000000000), nullptr);
  table.Insert(0, 1, 2);
  EXPECT_EQ(*table.Find(0, 1), 2);
}

// Random inserts and erases against std::map: erasing from the middle of
// probe runs (backward shift) must keep every other entry findable.
TEST(LiveAllocationTableTest, MatchesAMapUnderRandomChurn) {
  Table table;
  std::map<std::pair<int32_t, uint64_t>, int64_t> expected;
  std::mt19937_64 random(42);
  for (int step = 0; step < 200000; ++step) {
    // Few distinct keys, aligned as allocator blocks: long probe runs.
    const int32_t device = static_cast<int32_t>(random() % 2) - 1;
    const uint64_t address = 0x7f0000000000 + (random() % 3000) * 4096;
    const auto key = std::make_pair(device, address);
    int64_t* found = table.Find(device, address);
    auto it = expected.find(key);
    ASSERT_EQ(found != nullptr, it != expected.end()) << step;
    if (found != nullptr) {
      ASSERT_EQ(*found, it->second) << step;
      table.Erase(found);
      expected.erase(it);
    } else {
      table.Insert(device, address, step);
      expected.emplace(key, step);
    }
    ASSERT_EQ(table.size(), expected.size());
  }
  for (const auto& [key, value] : expected) {
    const int64_t* found = table.Find(key.first, key.second);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(*found, value);
  }
}

}  // namespace
}  // namespace deepcontext::profiler
