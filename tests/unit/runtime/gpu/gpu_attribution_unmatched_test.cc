// GpuAttribution's bookkeeping of records and launches that never meet:
// records without a launch (unattributed, parked, outside trace windows),
// launches without records (evicted, forgotten, taken by another CUPTI
// client).
#include <gtest/gtest.h>

#include "runtime/gpu/gpu_attribution.h"
#include "tests/unit/runtime/gpu/attribution_records.h"

namespace deepcontext::gpu {
namespace {

using test_records::Copy;
using test_records::GpuAttributionTest;
using test_records::Kernel;
using test_records::kRoot;
using test_records::Launch;
using test_records::Sync;

TEST_F(GpuAttributionTest, RecordsWithoutLaunchGoToUnattributedAtFlush) {
  AttributionOptions options;
  options.root_context = kRoot;
  GpuAttribution attribution(sink_, options);
  attribution.OnKernel(Kernel(77, "orphan", 0, 70));
  attribution.OnMemcpy(Copy(78, CopyKind::kDeviceToHost, MemoryKind::kDevice,
                            MemoryKind::kPinned, 16, 70, 80));
  EXPECT_EQ(sink_.Total(GpuMetric::kGpuTime).count, 0u);
  attribution.Flush();
  const ContextId unattributed = sink_.Find(kRoot, {"<unattributed>"});
  ASSERT_NE(unattributed, 0u);
  EXPECT_EQ(sink_.NodeOf(unattributed).kind, GpuNodeKind::kApi);
  EXPECT_EQ(sink_.Sum(kRoot, {"<unattributed>", "orphan"}, GpuMetric::kGpuTime), 70);
  EXPECT_EQ(sink_.Sum(kRoot, {"<unattributed>", "memcpy DtoH (pinned)"}, GpuMetric::kBytes), 16);
  const AttributionStats stats = attribution.Stats();
  EXPECT_EQ(stats.unattributed, 2u);
  EXPECT_EQ(stats.parked, 0u);
  EXPECT_EQ(stats.tracked, 0u);
}

TEST_F(GpuAttributionTest, UnderTraceWindowsRecordsWithoutLaunchAreLeftOut) {
  AttributionOptions options;
  options.root_context = kRoot;
  options.max_parked_records = 1;
  GpuAttribution attribution(sink_, options);
  attribution.SetWindowed(true);
  attribution.OnLaunch(Launch(5, 10));
  attribution.OnKernel(Kernel(5, "traced", 0, 50));
  // Launched while tracing switched: no launch ever arrives for them. The
  // second one overflows the parking space.
  attribution.OnKernel(Kernel(77, "edge", 60, 70));
  attribution.OnKernel(Kernel(78, "edge", 70, 80));
  attribution.Flush();
  EXPECT_EQ(sink_.Find(kRoot, {"<unattributed>"}), 0u);
  EXPECT_EQ(sink_.Total(GpuMetric::kGpuTime).sum, 50);
  const AttributionStats stats = attribution.Stats();
  EXPECT_EQ(stats.outside_windows, 2u);
  EXPECT_EQ(stats.unattributed, 0u);
  EXPECT_EQ(stats.attributed, 1u);
  ASSERT_EQ(attribution.Devices().size(), 1u);
  EXPECT_EQ(attribution.Devices()[0].busy_ns, 50u);  // the edge kernels left out
}

TEST_F(GpuAttributionTest, ParkedRecordsAreBounded) {
  AttributionOptions options;
  options.max_parked_records = 2;
  GpuAttribution attribution(sink_, options);
  attribution.OnKernel(Kernel(1, "k", 0, 1));
  attribution.OnKernel(Kernel(2, "k", 1, 2));
  attribution.OnKernel(Kernel(3, "k", 2, 3));  // over the bound
  EXPECT_EQ(attribution.Stats().parked, 2u);
  EXPECT_EQ(attribution.Stats().unattributed, 1u);
  EXPECT_EQ(sink_.Count(kRoot, {"<unattributed>", "k"}, GpuMetric::kGpuTime), 1u);
  attribution.OnLaunch(Launch(1, 10));
  attribution.OnLaunch(Launch(2, 10));
  attribution.Flush();
  EXPECT_EQ(sink_.Count(10, {"cuLaunchKernel", "k"}, GpuMetric::kGpuTime), 2u);
}

TEST_F(GpuAttributionTest, LaunchesWithoutRecordsAreEvicted) {
  AttributionOptions options;
  options.max_launches = 64 * 4;  // four per shard
  GpuAttribution attribution(sink_, options);
  for (uint64_t id = 1; id <= 10000; ++id) attribution.OnLaunch(Launch(id, 10));
  const AttributionStats stats = attribution.Stats();
  EXPECT_GT(stats.evicted_launches, 9000u);
  EXPECT_LE(stats.tracked, 64u * 5);
  // The newest launches survive.
  attribution.OnKernel(Kernel(10000, "recent", 0, 3));
  EXPECT_EQ(sink_.Sum(10, {"cuLaunchKernel", "recent"}, GpuMetric::kGpuTime), 3);
}

TEST_F(GpuAttributionTest, ForgottenLaunchesLeaveTheTableAndGetNoRecords) {
  GpuAttribution attribution(sink_);
  attribution.OnLaunch(Launch(1, 10));  // captured into a graph
  attribution.OnLaunch(Launch(2, 10));
  EXPECT_EQ(attribution.Stats().tracked, 2u);
  attribution.ForgetLaunch(1);
  attribution.ForgetLaunch(99);  // unknown ids are ignored
  EXPECT_EQ(attribution.Stats().tracked, 1u);
  attribution.OnKernel(Kernel(1, "stray", 0, 5));
  attribution.OnKernel(Kernel(2, "ran", 0, 7));
  attribution.Flush();
  EXPECT_EQ(sink_.Sum(10, {"cuLaunchKernel", "ran"}, GpuMetric::kGpuTime), 7);
  EXPECT_EQ(sink_.Sum(10, {"cuLaunchKernel", "stray"}, GpuMetric::kGpuTime), 0);
  EXPECT_EQ(attribution.Stats().unattributed, 1u);
}

// Another CUPTI client took the activity callbacks: launches keep coming,
// their records go elsewhere, and a forced flush hands over nothing.
TEST_F(GpuAttributionTest, LaunchesWhoseRecordsStoppedAreCountedAtFlush) {
  GpuAttribution attribution(sink_);
  for (uint64_t id = 1; id <= 3; ++id) {  // before the takeover
    attribution.OnLaunch(Launch(id, 10));
    attribution.OnKernel(Kernel(id, "k", id * 10, id * 10 + 5));
  }
  for (uint64_t id = 4; id <= 10; ++id) attribution.OnLaunch(Launch(id, 10));
  attribution.OnLaunch(Launch(11, 10, "cuGraphLaunch", 4));
  attribution.Flush();  // a flush that did not ask the vendor: no verdict
  EXPECT_EQ(attribution.Stats().launches_without_records, 0u);

  attribution.BeginFlush();
  attribution.Flush();
  EXPECT_EQ(attribution.Stats().launches_without_records, 8u);
  // The next flush adds only the launches made since.
  attribution.OnLaunch(Launch(12, 10));
  attribution.OnLaunch(Launch(13, 10, "cuMemcpyHtoDAsync_v2"));
  attribution.BeginFlush();
  attribution.Flush();
  EXPECT_EQ(attribution.Stats().launches_without_records, 10u);
  // What arrived before the takeover is kept.
  EXPECT_EQ(sink_.Count(10, {"cuLaunchKernel", "k"}, GpuMetric::kGpuTime), 3u);
}

// Synchronization records are made by the driver callbacks when the call
// returns: one that follows launches whose records went elsewhere must not
// make those launches look answered.
TEST_F(GpuAttributionTest, ASynchronizationDoesNotHideLaunchesWithoutRecords) {
  GpuAttribution attribution(sink_);
  attribution.OnLaunch(Launch(1, 10));
  attribution.OnKernel(Kernel(1, "k", 0, 5));
  attribution.OnLaunch(Launch(2, 10));  // its record goes to another client
  attribution.OnLaunch(Launch(3, 10));  // so does this one
  LaunchRecord sync_call = Launch(4, 10, "cuCtxSynchronize");
  sync_call.record_at_return = true;
  attribution.OnLaunch(sync_call);
  attribution.OnSync(Sync(4, SyncKind::kContext, 100, 900));
  attribution.BeginFlush();
  attribution.Flush();
  EXPECT_EQ(attribution.Stats().launches_without_records, 2u);
  EXPECT_EQ(sink_.Sum(10, {"cuCtxSynchronize", "sync: context"}, GpuMetric::kSyncTime), 800);
}

// Records arrive (forced flushes hand over those of unfinished work too),
// some launches are still in flight at a flush, some never produce a
// record: nothing is counted.
TEST_F(GpuAttributionTest, NormalRunsWithWorkInFlightAreNotCounted) {
  GpuAttribution attribution(sink_);
  attribution.OnLaunch(Launch(1, 10));
  attribution.OnLaunch(Launch(2, 10));  // never gets a record
  attribution.OnLaunch(Launch(3, 10));
  attribution.OnLaunch(Launch(4, 10, "cuLaunchCooperativeKernelMultiDevice", 0));
  LaunchRecord blocked = Launch(5, 10, "cuStreamSynchronize");
  blocked.record_at_return = true;  // a thread still waiting in it
  attribution.OnLaunch(blocked);
  attribution.OnLaunch(Launch(6, 10));
  attribution.ForgetLaunch(6);  // the call failed
  attribution.BeginFlush();
  attribution.OnLaunch(Launch(7, 10));  // made while the flush runs
  attribution.OnKernel(Kernel(1, "k", 0, 5));
  attribution.OnKernel(Kernel(3, "k", 5, 0));  // unfinished: no end time
  attribution.Flush();
  EXPECT_EQ(attribution.Stats().launches_without_records, 0u);

  // Next interval: the in-flight launch's record comes with this flush.
  attribution.BeginFlush();
  attribution.OnLaunch(Launch(8, 10));
  attribution.OnKernel(Kernel(7, "k", 10, 20));
  attribution.Flush();
  EXPECT_EQ(attribution.Stats().launches_without_records, 0u);

  // A quiet interval: no records at all while old launches (2, 5) still
  // wait, but a later launch (7) got its record, so they are not a sign.
  attribution.BeginFlush();
  attribution.OnKernel(Kernel(8, "k", 20, 30));
  attribution.Flush();
  attribution.BeginFlush();
  attribution.Flush();
  EXPECT_EQ(attribution.Stats().launches_without_records, 0u);
  EXPECT_EQ(attribution.Stats().tracked, 2u);  // launches 2 and 5
  // The unfinished kernel (3) has no duration: untimed, not a time of 0.
  EXPECT_EQ(sink_.Count(10, {"cuLaunchKernel", "k"}, GpuMetric::kGpuTime), 3u);
  EXPECT_EQ(sink_.Count(10, {"cuLaunchKernel", "k"}, GpuMetric::kUntimedLaunches), 1u);
}

}  // namespace
}  // namespace deepcontext::gpu
