#include "runtime/gpu/correlation_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/runtime/gpu/attribution_records.h"

namespace deepcontext::gpu {
namespace {

using test_records::Launch;

// The `local`-th id of shard `shard`: ids go to shards 64 at a time.
uint64_t IdOf(uint64_t local, uint64_t shard = 0) {
  return ((local >> 6) << 12) | (shard << 6) | (local & 63);
}

TEST(CorrelationTableTest, ClaimCountsAndErases) {
  CorrelationTable table(1024, 16);
  EXPECT_FALSE(table.AddLaunch(Launch(1, 10, "cuLaunchKernel", 2)));
  LaunchInfo info;
  ASSERT_TRUE(table.Claim(1, &info));
  EXPECT_EQ(info.context, 10u);
  EXPECT_EQ(info.api_name(), "cuLaunchKernel");
  EXPECT_EQ(table.size(), 1u);
  ASSERT_TRUE(table.Claim(1, &info));
  EXPECT_EQ(table.size(), 0u);
  EXPECT_FALSE(table.Claim(1, &info));
}

TEST(CorrelationTableTest, LongApiNamesAreTruncated) {
  CorrelationTable table(1024, 16);
  const std::string name(100, 'x');
  table.AddLaunch(Launch(1, 10, name));
  LaunchInfo info;
  ASSERT_TRUE(table.Claim(1, &info));
  EXPECT_EQ(info.api_name(), name.substr(0, LaunchInfo::kMaxApiName));
}

TEST(CorrelationTableTest, ParkedRecordsAreHandedOverOnceLaunched) {
  CorrelationTable table(1024, 16);
  LaunchInfo info;
  KernelRecord kernel;
  kernel.correlation_id = 3;
  kernel.name = "k";
  EXPECT_EQ(table.Park(3, PendingRecord(kernel), &info),
            CorrelationTable::ParkResult::kParked);
  EXPECT_EQ(table.Park(3, PendingRecord(SyncRecord{}), &info),
            CorrelationTable::ParkResult::kParked);
  EXPECT_EQ(table.parked(), 2u);
  int visits = 0;
  table.TakeReady([&](const LaunchInfo&, std::vector<PendingRecord>&) { ++visits; });
  EXPECT_EQ(visits, 0);  // not launched yet

  EXPECT_TRUE(table.AddLaunch(Launch(3, 30, "cuLaunchKernel", 2)));
  // A record arriving after the launch but before TakeReady is claimed.
  EXPECT_EQ(table.Park(3, PendingRecord(kernel), &info),
            CorrelationTable::ParkResult::kLaunched);
  EXPECT_EQ(info.context, 30u);
  size_t handed = 0;
  table.TakeReady([&](const LaunchInfo& launch, std::vector<PendingRecord>& records) {
    EXPECT_EQ(launch.context, 30u);
    handed += records.size();
    EXPECT_TRUE(std::holds_alternative<KernelRecord>(records[0]));
    EXPECT_EQ(std::get<KernelRecord>(records[0]).name, "k");
  });
  EXPECT_EQ(handed, 2u);
  EXPECT_EQ(table.parked(), 0u);
  EXPECT_EQ(table.size(), 0u);  // 3 records >= 2 expected
}

TEST(CorrelationTableTest, ParkingIsBounded) {
  CorrelationTable table(1024, 1);
  LaunchInfo info;
  EXPECT_EQ(table.Park(1, PendingRecord(SyncRecord{}), &info),
            CorrelationTable::ParkResult::kParked);
  EXPECT_EQ(table.Park(2, PendingRecord(SyncRecord{}), &info),
            CorrelationTable::ParkResult::kFull);
}

TEST(CorrelationTableTest, FlushHandsOverOrphansAndKeepsOutstandingLaunches) {
  CorrelationTable table(1024, 16);
  LaunchInfo info;
  table.AddLaunch(Launch(1, 10, "a", 1));  // still expects its record
  table.AddLaunch(Launch(2, 20, "b", 0));  // open-ended
  table.Park(3, PendingRecord(SyncRecord{}), &info);
  int orphans = 0;
  int launched = 0;
  table.Flush([&](const LaunchInfo* launch, std::vector<PendingRecord>& records) {
    if (launch == nullptr) orphans += static_cast<int>(records.size());
    else launched += static_cast<int>(records.size());
  });
  EXPECT_EQ(orphans, 1);
  EXPECT_EQ(launched, 0);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_TRUE(table.Claim(1, &info));
  EXPECT_FALSE(table.Claim(2, &info));
}

TEST(CorrelationTableTest, ForgetErasesLaunchesWithoutParkedRecords) {
  CorrelationTable table(1024, 16);
  LaunchInfo info;
  table.AddLaunch(Launch(1, 10, "cuGraphLaunch", 5));
  table.Park(2, PendingRecord(KernelRecord{}), &info);
  table.AddLaunch(Launch(2, 20, "cuLaunchKernel"));
  table.Forget(1);
  table.Forget(2);  // its parked record is still to be handed over
  table.Forget(3);  // unknown: ignored
  EXPECT_EQ(table.size(), 1u);
  EXPECT_FALSE(table.Claim(1, &info));
}

TEST(CorrelationTableTest, CountUnansweredCountsEachQualifyingLaunchOnce) {
  CorrelationTable table(1024, 16);
  LaunchInfo info;
  table.AddLaunch(Launch(1, 10, "a"), /*epoch=*/0);      // got its record
  table.AddLaunch(Launch(2, 10, "b"), 0);                // counted
  table.AddLaunch(Launch(3, 10, "c", 0), 0);             // unknown count
  LaunchRecord sync = Launch(4, 10, "cuStreamSynchronize");
  sync.record_at_return = true;
  table.AddLaunch(sync, 0);                              // may still be waiting
  table.AddLaunch(Launch(5, 10, "d", 3), 0);             // counted
  table.AddLaunch(Launch(6, 10, "e"), 1);                // after the flush began
  ASSERT_TRUE(table.Claim(1, &info));
  EXPECT_EQ(table.CountUnanswered(/*before_epoch=*/1, /*newest_record=*/1), 2u);
  EXPECT_EQ(table.CountUnanswered(1, 1), 0u);  // already counted
  EXPECT_EQ(table.CountUnanswered(2, 1), 1u);  // launch 6, a flush later
  // Launches older than a record that did arrive are not counted.
  table.AddLaunch(Launch(7, 10, "f"), 2);
  EXPECT_EQ(table.CountUnanswered(3, 8), 0u);
  // Counted launches stay: their records may still be credited.
  EXPECT_TRUE(table.Claim(2, &info));
}

TEST(CorrelationTableTest, IdsEqualModuloTheShardsRingKeepTheirLaunches) {
  // 4 launches per shard: its ring has 4 slots, and locals 0, 4, 8 share one.
  CorrelationTable table(64 * 4, 16);
  for (uint64_t local : {8u, 0u, 4u}) {
    EXPECT_FALSE(table.AddLaunch(Launch(IdOf(local), 100 + local, "a")));
  }
  LaunchInfo info;
  EXPECT_FALSE(table.Claim(IdOf(12), &info));
  for (uint64_t local : {4u, 0u, 8u}) {
    ASSERT_TRUE(table.Claim(IdOf(local), &info)) << local;
    EXPECT_EQ(info.context, 100 + local);
  }
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.evicted(), 0u);
}

TEST(CorrelationTableTest, EvictionDropsTheOldestLaunchesOfTheShard) {
  CorrelationTable table(64 * 8, 16);  // 8 per shard
  LaunchInfo info;
  ASSERT_EQ(table.Park(IdOf(1), PendingRecord(SyncRecord{}), &info),
            CorrelationTable::ParkResult::kParked);
  for (uint64_t local : {7u, 3u, 5u, 0u, 6u, 9u, 4u}) {
    table.AddLaunch(Launch(IdOf(local), local, "a"));
  }
  table.AddLaunch(Launch(IdOf(5, 1), 55, "other shard"));
  EXPECT_EQ(table.evicted(), 0u);
  table.AddLaunch(Launch(IdOf(2), 2, "a"));  // the ninth entry of shard 0
  // Half of the 8 launches without parked records, oldest first, whatever
  // the order they came in; the parked id and the other shard stay.
  EXPECT_EQ(table.evicted(), 4u);
  EXPECT_EQ(table.size(), 6u);
  for (uint64_t local : {0u, 2u, 3u, 4u}) EXPECT_FALSE(table.Claim(IdOf(local), &info));
  for (uint64_t local : {5u, 6u, 7u, 9u}) EXPECT_TRUE(table.Claim(IdOf(local), &info));
  EXPECT_TRUE(table.Claim(IdOf(5, 1), &info));
  EXPECT_EQ(table.parked(), 1u);
}

TEST(CorrelationTableTest, ManyLaunchesInFlightBeyondTheFirstRing) {
  CorrelationTable table(size_t{1} << 20, 16);
  // 200000 launches wait (about 3000 per shard), then their records come in
  // order; ids of other API calls in between (every third id is a launch).
  constexpr uint64_t kLaunches = 200000;
  for (uint64_t k = 1; k <= kLaunches; ++k) table.AddLaunch(Launch(k * 3, k, "a"));
  EXPECT_EQ(table.size(), kLaunches);
  LaunchInfo info;
  for (uint64_t k = 1; k <= kLaunches; ++k) {
    ASSERT_TRUE(table.Claim(k * 3, &info)) << k;
    ASSERT_EQ(info.context, k);
  }
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.evicted(), 0u);
}

TEST(CorrelationTableTest, LaunchingThreadsAndAClaimingThreadMeetSafely) {
  CorrelationTable table(size_t{1} << 20, 16);
  constexpr uint64_t kPerThread = 100000;
  constexpr int kThreads = 2;
  std::atomic<bool> wrong{false};
  std::thread claimer([&] {
    LaunchInfo info;
    for (uint64_t id = 1; id <= kPerThread * kThreads; ++id) {
      while (!table.Claim(id, &info)) std::this_thread::yield();
      if (info.context != id * 5 || info.api_name() != "cuLaunchKernel") wrong = true;
    }
  });
  std::vector<std::thread> launchers;
  for (int t = 0; t < kThreads; ++t) {
    launchers.emplace_back([&table, t] {
      for (uint64_t id = 1 + static_cast<uint64_t>(t); id <= kPerThread * kThreads;
           id += kThreads) {
        table.AddLaunch(Launch(id, id * 5, "cuLaunchKernel"));
      }
    });
  }
  for (auto& thread : launchers) thread.join();
  claimer.join();
  EXPECT_FALSE(wrong.load());
  EXPECT_EQ(table.size(), 0u);
}

}  // namespace
}  // namespace deepcontext::gpu
