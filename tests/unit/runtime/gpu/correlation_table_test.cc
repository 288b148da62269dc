#include "runtime/gpu/correlation_table.h"

#include <gtest/gtest.h>

#include <string>

namespace deepcontext::gpu {
namespace {

LaunchRecord Launch(uint64_t id, ContextId context, std::string_view api,
                    uint32_t expected = 1) {
  LaunchRecord launch;
  launch.correlation_id = id;
  launch.context = context;
  launch.api_name = api;
  launch.expected_records = expected;
  return launch;
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

}  // namespace
}  // namespace deepcontext::gpu
