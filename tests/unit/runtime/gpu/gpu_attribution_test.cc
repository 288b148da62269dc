#include "runtime/gpu/gpu_attribution.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tests/unit/runtime/gpu/attribution_records.h"

namespace deepcontext::gpu {
namespace {

using test_records::Copy;
using test_records::GpuAttributionTest;
using test_records::Kernel;
using test_records::kRoot;
using test_records::Launch;
using test_records::Sync;

TEST_F(GpuAttributionTest, CreditsKernelUnderLaunchContextAndApi) {
  GpuAttribution attribution(sink_);
  attribution.OnLaunch(Launch(1, 10));
  attribution.OnKernel(Kernel(1, "gemm", 100, 600));

  const ContextId api = sink_.Find(10, {"cuLaunchKernel"});
  const ContextId kernel = sink_.Find(10, {"cuLaunchKernel", "gemm"});
  ASSERT_NE(api, 0u);
  ASSERT_NE(kernel, 0u);
  EXPECT_EQ(sink_.NodeOf(api).kind, GpuNodeKind::kApi);
  EXPECT_EQ(sink_.NodeOf(kernel).kind, GpuNodeKind::kKernel);
  EXPECT_EQ(sink_.Get(kernel, GpuMetric::kGpuTime).sum, 500);
  EXPECT_EQ(sink_.Get(kernel, GpuMetric::kGpuTime).count, 1u);
  EXPECT_EQ(sink_.Get(kernel, GpuMetric::kBlocks).sum, 8);
  EXPECT_EQ(sink_.Get(kernel, GpuMetric::kThreadsPerBlock).sum, 128);
  EXPECT_EQ(sink_.Get(kernel, GpuMetric::kThreadsLaunched).sum, 1024);
  EXPECT_EQ(sink_.Get(kernel, GpuMetric::kRegistersPerThread).sum, 32);
  EXPECT_EQ(sink_.Get(kernel, GpuMetric::kSharedMemoryBytes).sum, 3072);
  // No device info was given: no occupancy.
  EXPECT_EQ(sink_.Get(kernel, GpuMetric::kOccupancy).count, 0u);
  // Nothing went to the API node itself.
  EXPECT_EQ(sink_.Get(api, GpuMetric::kGpuTime).count, 0u);

  // Same context and kernel again: aggregated, nodes reused from the cache.
  const uint64_t child_calls = sink_.child_calls();
  attribution.OnLaunch(Launch(2, 10));
  attribution.OnKernel(Kernel(2, "gemm", 700, 800));
  EXPECT_EQ(sink_.Get(kernel, GpuMetric::kGpuTime).sum, 600);
  EXPECT_EQ(sink_.Get(kernel, GpuMetric::kGpuTime).count, 2u);
  EXPECT_EQ(sink_.child_calls(), child_calls);

  // Another context and API get their own path.
  attribution.OnLaunch(Launch(3, 11, "cuLaunchKernelEx"));
  attribution.OnKernel(Kernel(3, "gemm", 900, 1000));
  EXPECT_EQ(sink_.Sum(11, {"cuLaunchKernelEx", "gemm"}, GpuMetric::kGpuTime), 100);

  const AttributionStats stats = attribution.Stats();
  EXPECT_EQ(stats.launches, 3u);
  EXPECT_EQ(stats.records, 3u);
  EXPECT_EQ(stats.attributed, 3u);
  EXPECT_EQ(stats.unattributed, 0u);
  EXPECT_EQ(stats.tracked, 0u);  // each launch expected one record
}

// CUPTI writes 0 for both timestamps of a launch it could not time; on the
// H200 every launch its range profiler replayed (--gpu-metrics) came so
// (tests/gpu/check_metrics.py). Such a record counts as a launch, not as a
// GPU time of 0, and leaves the device's busy time alone.
TEST_F(GpuAttributionTest, KernelsWithoutTimestampsAreCountedApartFromGpuTime) {
  GpuAttribution attribution(sink_);
  attribution.OnLaunch(Launch(1, 10));
  attribution.OnKernel(Kernel(1, "gemm", 0, 0));  // measured: replayed, untimed
  attribution.OnLaunch(Launch(2, 10));
  attribution.OnKernel(Kernel(2, "gemm", 1000, 1400));
  attribution.OnLaunch(Launch(3, 10));
  attribution.OnKernel(Kernel(3, "gemm", 2000, 2600));
  attribution.OnLaunch(Launch(4, 10));
  attribution.OnKernel(Kernel(4, "once", 0, 0));  // its only launch, measured

  const ContextId gemm = sink_.Find(10, {"cuLaunchKernel", "gemm"});
  ASSERT_NE(gemm, 0u);
  EXPECT_EQ(sink_.Get(gemm, GpuMetric::kGpuTime).count, 2u);
  EXPECT_EQ(sink_.Get(gemm, GpuMetric::kGpuTime).sum, 1000);  // mean 500, not 333
  EXPECT_EQ(sink_.Get(gemm, GpuMetric::kUntimedLaunches).count, 1u);
  EXPECT_EQ(sink_.Get(gemm, GpuMetric::kUntimedLaunches).sum, 1);
  // Every launch still has its shape.
  EXPECT_EQ(sink_.Get(gemm, GpuMetric::kBlocks).count, 3u);

  const ContextId once = sink_.Find(10, {"cuLaunchKernel", "once"});
  ASSERT_NE(once, 0u);
  EXPECT_EQ(sink_.Get(once, GpuMetric::kGpuTime).count, 0u);
  EXPECT_EQ(sink_.Get(once, GpuMetric::kUntimedLaunches).count, 1u);

  EXPECT_EQ(attribution.Stats().untimed_kernels, 2u);
  EXPECT_EQ(attribution.Stats().attributed, 4u);
  const std::vector<DeviceActivity> devices = attribution.Devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].kernels, 2u);
  EXPECT_EQ(devices[0].busy_ns, 1000u);
}

TEST_F(GpuAttributionTest, RecordsBeforeTheirLaunchAreCreditedWhenItArrives) {
  GpuAttribution attribution(sink_);
  attribution.OnKernel(Kernel(5, "a", 0, 10));
  attribution.OnKernel(Kernel(6, "b", 10, 30));
  EXPECT_EQ(attribution.Stats().parked, 2u);
  EXPECT_EQ(sink_.Total(GpuMetric::kGpuTime).count, 0u);

  attribution.OnLaunch(Launch(5, 20));
  attribution.OnLaunch(Launch(6, 21));
  attribution.ProcessLate();
  EXPECT_EQ(sink_.Sum(20, {"cuLaunchKernel", "a"}, GpuMetric::kGpuTime), 10);
  EXPECT_EQ(sink_.Sum(21, {"cuLaunchKernel", "b"}, GpuMetric::kGpuTime), 20);

  // A late launch is also picked up by the next record processed.
  attribution.OnKernel(Kernel(7, "c", 30, 35));
  attribution.OnLaunch(Launch(7, 22));
  attribution.OnLaunch(Launch(8, 23));
  attribution.OnKernel(Kernel(8, "d", 40, 41));
  EXPECT_EQ(sink_.Sum(22, {"cuLaunchKernel", "c"}, GpuMetric::kGpuTime), 5);
  EXPECT_EQ(sink_.Sum(23, {"cuLaunchKernel", "d"}, GpuMetric::kGpuTime), 1);

  const AttributionStats stats = attribution.Stats();
  EXPECT_EQ(stats.late, 3u);
  EXPECT_EQ(stats.attributed, 4u);
  EXPECT_EQ(stats.parked, 0u);
  EXPECT_EQ(stats.tracked, 0u);
}

TEST_F(GpuAttributionTest, GraphKernelsGoToTheContextThatCreatedTheirNode) {
  GpuAttribution attribution(sink_);
  // Captured on two different contexts, then instantiated (cloned).
  attribution.OnGraphNodeCreated(100, 30, "cuLaunchKernel");
  attribution.OnGraphNodeCreated(101, 31, "cuLaunchKernelEx");
  attribution.OnGraphNodeCloned(200, 100);
  attribution.OnGraphNodeCloned(201, 101);
  attribution.OnGraphNodeCloned(202, 555);  // unknown original: ignored

  for (uint64_t replay = 0; replay < 3; ++replay) {
    const uint64_t correlation = 9 + replay;
    attribution.OnLaunch(Launch(correlation, 40, "cuGraphLaunch", 0));
    attribution.OnKernel([&] {
      KernelRecord k = Kernel(correlation, "k0", 0, 100);
      k.graph_id = 3;
      k.graph_node_id = 200;
      return k;
    }());
    attribution.OnKernel([&] {
      KernelRecord k = Kernel(correlation, "k1", 100, 150);
      k.graph_id = 3;
      k.graph_node_id = 201;
      return k;
    }());
    attribution.OnKernel([&] {
      KernelRecord k = Kernel(correlation, "k2", 150, 160);
      k.graph_id = 3;
      k.graph_node_id = 202;  // creation not seen: falls back to the launch
      return k;
    }());
  }
  EXPECT_EQ(sink_.Sum(30, {"cuLaunchKernel", "k0"}, GpuMetric::kGpuTime), 300);
  EXPECT_EQ(sink_.Count(30, {"cuLaunchKernel", "k0"}, GpuMetric::kGpuTime), 3u);
  EXPECT_EQ(sink_.Sum(31, {"cuLaunchKernelEx", "k1"}, GpuMetric::kGpuTime), 150);
  EXPECT_EQ(sink_.Sum(40, {"cuGraphLaunch", "k2"}, GpuMetric::kGpuTime), 30);
  EXPECT_EQ(sink_.Find(40, {"cuGraphLaunch", "k0"}), 0u);

  AttributionStats stats = attribution.Stats();
  EXPECT_EQ(stats.via_graph_node, 6u);
  EXPECT_EQ(stats.attributed, 9u);
  EXPECT_EQ(stats.tracked, 3u);  // open-ended graph launches are kept ...
  attribution.Flush();
  EXPECT_EQ(attribution.Stats().tracked, 0u);  // ... until a flush

  // After the flush a straggler of an old launch cannot be placed.
  KernelRecord straggler = Kernel(9, "k2", 200, 210);
  straggler.graph_node_id = 202;
  attribution.OnKernel(straggler);
  attribution.Flush();
  EXPECT_EQ(sink_.Sum(kRoot, {"<unattributed>", "k2"}, GpuMetric::kGpuTime), 10);
}

TEST_F(GpuAttributionTest, AResolverPlacesKernelsOfUnknownGraphNodes) {
  GpuAttribution attribution(sink_);
  attribution.OnGraphNodeCreated(100, 30, "cuGraphAddNode_v2");
  std::vector<std::string> asked;
  attribution.SetGraphKernelResolver(
      [&](uint64_t correlation, uint64_t node, std::string_view kernel) -> ContextId {
        asked.push_back(std::to_string(correlation) + "/" + std::to_string(node) + "/" +
                        std::string(kernel));
        return kernel == "gemm" ? 50 : 0;
      });
  attribution.OnLaunch(Launch(9, 40, "cuGraphLaunch", 0));
  for (auto [node, name] : {std::pair<uint64_t, const char*>{100, "k0"}, {300, "gemm"},
                            {301, "other"}}) {
    KernelRecord k = Kernel(9, name, 0, 10);
    k.graph_id = 3;
    k.graph_node_id = node;
    attribution.OnKernel(k);
  }
  MemsetRecord memset;
  memset.correlation_id = 9;
  memset.graph_node_id = 302;
  memset.start_ns = 20;
  memset.end_ns = 25;
  attribution.OnMemset(memset);
  // Known nodes are not asked about; an unplaced kernel stays at the launch.
  EXPECT_EQ(asked, (std::vector<std::string>{"9/300/gemm", "9/301/other", "9/302/<memset>"}));
  EXPECT_EQ(sink_.Sum(30, {"cuGraphAddNode_v2", "k0"}, GpuMetric::kGpuTime), 10);
  EXPECT_EQ(sink_.Sum(50, {"cuGraphLaunch", "gemm"}, GpuMetric::kGpuTime), 10);
  EXPECT_EQ(sink_.Sum(40, {"cuGraphLaunch", "other"}, GpuMetric::kGpuTime), 10);
}

TEST_F(GpuAttributionTest, APlacerMovesKnownGraphNodesGivenTheirLaunch) {
  GpuAttribution attribution(sink_);
  attribution.OnGraphNodeCreated(100, 30, "cuGraphAddNode_v2");
  attribution.OnGraphNodeCreated(101, 31, "cuLaunchKernelEx");
  std::vector<std::pair<ContextId, ContextId>> asked;
  attribution.SetGraphNodePlacer([&](ContextId node, ContextId launch) -> ContextId {
    asked.emplace_back(node, launch);
    return node == 30 ? 60 : node;  // 31 stays
  });
  attribution.OnLaunch(Launch(9, 40, "cuGraphLaunch", 0));
  for (auto [node, name] : {std::pair<uint64_t, const char*>{100, "k0"}, {101, "k1"}}) {
    KernelRecord k = Kernel(9, name, 0, 10);
    k.graph_id = 3;
    k.graph_node_id = node;
    attribution.OnKernel(k);
  }
  // A record whose launch is unknown keeps its node's context unasked.
  KernelRecord orphan = Kernel(77, "k0", 20, 25);
  orphan.graph_id = 3;
  orphan.graph_node_id = 100;
  attribution.OnKernel(orphan);
  EXPECT_EQ(asked, (std::vector<std::pair<ContextId, ContextId>>{{30, 40}, {31, 40}}));
  EXPECT_EQ(sink_.Sum(60, {"cuGraphAddNode_v2", "k0"}, GpuMetric::kGpuTime), 10);
  EXPECT_EQ(sink_.Sum(31, {"cuLaunchKernelEx", "k1"}, GpuMetric::kGpuTime), 10);
  EXPECT_EQ(sink_.Sum(30, {"cuGraphAddNode_v2", "k0"}, GpuMetric::kGpuTime), 5);
  EXPECT_EQ(attribution.Stats().via_graph_node, 3u);
}

TEST_F(GpuAttributionTest, GraphLaunchWithKnownNodeCountIsForgottenWhenComplete) {
  GpuAttribution attribution(sink_);
  attribution.OnLaunch(Launch(1, 50, "cuGraphLaunch", 2));
  KernelRecord first = Kernel(1, "x", 0, 5);
  first.graph_node_id = 7;
  attribution.OnKernel(first);
  EXPECT_EQ(attribution.Stats().tracked, 1u);
  KernelRecord second = Kernel(1, "y", 5, 9);
  second.graph_node_id = 8;
  attribution.OnKernel(second);
  EXPECT_EQ(attribution.Stats().tracked, 0u);
  EXPECT_EQ(sink_.Sum(50, {"cuGraphLaunch", "x"}, GpuMetric::kGpuTime), 5);
  EXPECT_EQ(sink_.Sum(50, {"cuGraphLaunch", "y"}, GpuMetric::kGpuTime), 4);
}

TEST_F(GpuAttributionTest, DevicesAndStreamsKeepSeparateBusyTime) {
  GpuAttribution attribution(sink_);
  attribution.OnLaunch(Launch(1, 10));
  attribution.OnLaunch(Launch(2, 10));
  attribution.OnLaunch(Launch(3, 11));
  attribution.OnLaunch(Launch(4, 12));
  // Device 0: two overlapping kernels on streams 1 and 2, one later.
  attribution.OnKernel(Kernel(2, "k", 50, 150, 0, 2));
  attribution.OnKernel(Kernel(1, "k", 0, 100, 0, 1));
  attribution.OnKernel(Kernel(3, "k", 200, 300, 0, 1));
  // Device 1: one long kernel.
  attribution.OnKernel(Kernel(4, "k", 0, 1000, 1, 5));

  // Attribution follows correlation, not device or stream.
  EXPECT_EQ(sink_.Sum(10, {"cuLaunchKernel", "k"}, GpuMetric::kGpuTime), 200);
  EXPECT_EQ(sink_.Sum(11, {"cuLaunchKernel", "k"}, GpuMetric::kGpuTime), 100);
  EXPECT_EQ(sink_.Sum(12, {"cuLaunchKernel", "k"}, GpuMetric::kGpuTime), 1000);

  const std::vector<DeviceActivity> devices = attribution.Devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].device, 0u);
  EXPECT_EQ(devices[0].busy_ns, 250u);  // union, not the 300 ns sum
  EXPECT_EQ(devices[0].first_start_ns, 0u);
  EXPECT_EQ(devices[0].last_end_ns, 300u);
  EXPECT_EQ(devices[0].kernels, 3u);
  EXPECT_EQ(devices[1].device, 1u);
  EXPECT_EQ(devices[1].busy_ns, 1000u);
  EXPECT_EQ(devices[1].kernels, 1u);
}

TEST_F(GpuAttributionTest, CopiesAreNamedByDirectionAndHostMemory) {
  GpuAttribution attribution(sink_);
  for (uint64_t id = 1; id <= 6; ++id) attribution.OnLaunch(Launch(id, 10, "cuMemcpyAsync"));
  attribution.OnMemcpy(Copy(1, CopyKind::kHostToDevice, MemoryKind::kPageable,
                            MemoryKind::kDevice, 4096, 0, 40));
  attribution.OnMemcpy(Copy(2, CopyKind::kHostToDevice, MemoryKind::kPinned,
                            MemoryKind::kDevice, 4096, 40, 50));
  attribution.OnMemcpy(Copy(3, CopyKind::kDeviceToHost, MemoryKind::kDevice,
                            MemoryKind::kPageable, 8, 60, 90));
  attribution.OnMemcpy(Copy(4, CopyKind::kDeviceToDevice, MemoryKind::kDevice,
                            MemoryKind::kDevice, 100, 90, 91));
  MemsetRecord memset;
  memset.correlation_id = 5;
  memset.bytes = 256;
  memset.start_ns = 100;
  memset.end_ns = 103;
  attribution.OnMemset(memset);
  attribution.OnMemcpy(Copy(6, CopyKind::kHostToDevice, MemoryKind::kPageable,
                            MemoryKind::kDevice, 1024, 200, 220));

  const std::vector<std::string> pageable = {"cuMemcpyAsync", "memcpy HtoD (pageable)"};
  EXPECT_EQ(sink_.Sum(10, pageable, GpuMetric::kBytes), 5120);
  EXPECT_EQ(sink_.Sum(10, pageable, GpuMetric::kGpuTime), 60);
  EXPECT_EQ(sink_.Count(10, pageable, GpuMetric::kGpuTime), 2u);
  EXPECT_EQ(sink_.Sum(10, {"cuMemcpyAsync", "memcpy HtoD (pinned)"}, GpuMetric::kGpuTime), 10);
  EXPECT_EQ(sink_.Sum(10, {"cuMemcpyAsync", "memcpy DtoH (pageable)"}, GpuMetric::kBytes), 8);
  EXPECT_EQ(sink_.Sum(10, {"cuMemcpyAsync", "memcpy DtoD"}, GpuMetric::kBytes), 100);
  const ContextId memset_node = sink_.Find(10, {"cuMemcpyAsync", "memset"});
  ASSERT_NE(memset_node, 0u);
  EXPECT_EQ(sink_.NodeOf(memset_node).kind, GpuNodeKind::kMemset);
  EXPECT_EQ(sink_.Get(memset_node, GpuMetric::kBytes).sum, 256);
  EXPECT_EQ(sink_.NodeOf(sink_.Find(10, {"cuMemcpyAsync", "memcpy DtoD"})).kind,
            GpuNodeKind::kMemcpy);
  // Copies are not kernels: no busy time.
  EXPECT_TRUE(attribution.Devices().empty());
}

TEST_F(GpuAttributionTest, SynchronizationTimeGoesUnderItsApi) {
  GpuAttribution attribution(sink_);
  attribution.OnLaunch(Launch(50, 60, "cuStreamSynchronize"));
  attribution.OnLaunch(Launch(51, 60, "cuCtxSynchronize"));
  attribution.OnSync(Sync(50, SyncKind::kStream, 1000, 5000));
  attribution.OnSync(Sync(51, SyncKind::kContext, 1000, 1500));

  const ContextId node = sink_.Find(60, {"cuStreamSynchronize", "sync: stream"});
  ASSERT_NE(node, 0u);
  EXPECT_EQ(sink_.NodeOf(node).kind, GpuNodeKind::kSync);
  EXPECT_EQ(sink_.Get(node, GpuMetric::kSyncTime).sum, 4000);
  EXPECT_EQ(sink_.Get(node, GpuMetric::kGpuTime).count, 0u);
  EXPECT_EQ(sink_.Sum(60, {"cuCtxSynchronize", "sync: context"}, GpuMetric::kSyncTime), 500);
}


TEST_F(GpuAttributionTest, OccupancyUsesTheDeviceLimits) {
  GpuAttribution attribution(sink_);
  attribution.SetDeviceInfo(0, DeviceInfoForArch(9, 0, 132));
  attribution.OnLaunch(Launch(1, 10));
  KernelRecord kernel = Kernel(1, "k", 0, 10, /*device=*/0);
  kernel.block_x = 256;
  kernel.registers_per_thread = 64;  // 64 regs x 256 threads: 4 blocks / SM
  kernel.static_shared_bytes = 0;
  kernel.dynamic_shared_bytes = 0;
  attribution.OnKernel(kernel);
  EXPECT_DOUBLE_EQ(sink_.Sum(10, {"cuLaunchKernel", "k"}, GpuMetric::kOccupancy), 0.5);

  attribution.OnLaunch(Launch(2, 10));
  attribution.OnKernel(Kernel(2, "other_device", 0, 10, /*device=*/3));
  EXPECT_EQ(sink_.Count(10, {"cuLaunchKernel", "other_device"}, GpuMetric::kOccupancy), 0u);
}

TEST_F(GpuAttributionTest, ConcurrentLaunchesAndRecords) {
  AttributionOptions options;
  options.max_parked_records = size_t{1} << 20;
  GpuAttribution attribution(sink_, options);
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 20000;
  constexpr uint64_t kTotal = kThreads * kPerThread;

  std::atomic<bool> go{false};
  std::vector<std::thread> launchers;
  for (int t = 0; t < kThreads; ++t) {
    launchers.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      for (uint64_t k = 0; k < kPerThread; ++k) {
        attribution.OnLaunch(Launch(1 + t + k * kThreads, 100 + t));
      }
    });
  }
  // Records for every id, processed while launches are still being made,
  // so some arrive before their launch and some after.
  std::thread processor([&] {
    while (!go.load()) std::this_thread::yield();
    for (uint64_t id = 1; id <= kTotal; ++id) {
      attribution.OnKernel(Kernel(id, "k", id * 10, id * 10 + 5));
    }
  });
  go.store(true);
  for (std::thread& thread : launchers) thread.join();
  processor.join();
  attribution.Flush();

  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(sink_.Count(100 + t, {"cuLaunchKernel", "k"}, GpuMetric::kGpuTime),
              kPerThread)
        << "thread " << t;
  }
  const AttributionStats stats = attribution.Stats();
  EXPECT_EQ(stats.records, kTotal);
  EXPECT_EQ(stats.attributed, kTotal);
  EXPECT_EQ(stats.unattributed, 0u);
  EXPECT_EQ(stats.parked, 0u);
  EXPECT_EQ(stats.tracked, 0u);
  EXPECT_EQ(sink_.Total(GpuMetric::kGpuTime).sum, 5.0 * kTotal);
}

TEST(MemcpyNodeNameTest, NamesHostSide) {
  MemcpyRecord copy;
  copy.kind = CopyKind::kHostToHost;
  copy.src_kind = MemoryKind::kPinned;
  copy.dst_kind = MemoryKind::kPageable;
  EXPECT_EQ(MemcpyNodeName(copy), "memcpy HtoH (pageable)");
  copy.kind = CopyKind::kPeerToPeer;
  EXPECT_EQ(MemcpyNodeName(copy), "memcpy PtoP");
  copy.kind = CopyKind::kDeviceToHost;
  copy.dst_kind = MemoryKind::kManaged;
  EXPECT_EQ(MemcpyNodeName(copy), "memcpy DtoH (managed)");
}

}  // namespace
}  // namespace deepcontext::gpu
