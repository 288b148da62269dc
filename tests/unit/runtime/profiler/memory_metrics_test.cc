#include "runtime/profiler/memory_metrics.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace deepcontext::profiler {
namespace {

// metric name -> context -> accumulator, as a profile writer would see it.
std::map<std::string, std::map<ContextId, Accumulator>> Snapshot(
    const MetricStore& store, ContextId contexts = 64) {
  std::map<std::string, std::map<ContextId, Accumulator>> out;
  const auto metrics = store.Metrics();
  store.ForEach(contexts, [&](ContextId context, MetricId metric,
                        const Accumulator& value) {
    out[metrics[metric].name][context] = value;
  });
  return out;
}

std::string MetadataValue(MemoryMetrics& memory, const std::string& key) {
  for (const auto& [k, v] : memory.Metadata()) {
    if (k == key) return v;
  }
  return "";
}

TEST(MemoryMetrics, AllocatedBytesAndCountsPerContext) {
  MetricStore store;
  MemoryMetrics memory(store);
  memory.Record(0, 0x1000, 100, 5);
  memory.Record(0, 0x2000, 300, 5);
  memory.Record(0, 0x3000, 50, 6);
  memory.Publish();
  auto values = Snapshot(store);
  EXPECT_EQ(values["gpu_alloc_bytes"][5].sum, 400);
  EXPECT_EQ(values["gpu_alloc_bytes"][5].count, 2u);
  EXPECT_EQ(values["gpu_alloc_bytes"][5].min, 100);
  EXPECT_EQ(values["gpu_alloc_bytes"][5].max, 300);
  EXPECT_EQ(values["gpu_alloc_bytes"][6].sum, 50);
}

// An allocation runs inside the framework's allocator, on the program's
// thread: it adds to this object's own entry of the context, and the store,
// whose per-context lock the thread draining finished ops takes too, sees
// the sum when published.
TEST(MemoryMetrics, AllocationsReachTheStoreWhenPublished) {
  MetricStore store;
  MemoryMetrics memory(store);
  memory.Record(0, 0x1000, 100, 5);
  EXPECT_EQ(Snapshot(store)["gpu_alloc_bytes"].count(5), 0u);
  memory.Publish();
  memory.Record(0, 0x2000, 300, 5);
  memory.Publish();  // replaces the first call's value, adds nothing twice
  auto values = Snapshot(store);
  EXPECT_EQ(values["gpu_alloc_bytes"][5].sum, 400);
  EXPECT_EQ(values["gpu_alloc_bytes"][5].count, 2u);
}

TEST(MemoryMetrics, AllocationsOfOneContextOnTwoGpusAddUp) {
  MetricStore store;
  MemoryMetrics memory(store);
  memory.Record(0, 0x1000, 100, 5);
  memory.Record(1, 0x1000, 700, 5);
  memory.Record(1, 0x2000, 50, 5);
  memory.Publish();
  auto values = Snapshot(store);
  EXPECT_EQ(values["gpu_alloc_bytes"][5].sum, 850);
  EXPECT_EQ(values["gpu_alloc_bytes"][5].count, 3u);
  EXPECT_EQ(values["gpu_alloc_bytes"][5].min, 50);
  EXPECT_EQ(values["gpu_alloc_bytes"][5].max, 700);
}

TEST(MemoryMetrics, PeakLiveBytesNameWhoHeldThePeak) {
  MetricStore store;
  MemoryMetrics memory(store);
  // Step 1: context 5 holds 100, context 6 adds 300 (peak 400), frees it.
  memory.Record(0, 0x1000, 100, 5);
  memory.Record(0, 0x2000, 300, 6);
  memory.Record(0, 0x2000, -300, 0);  // freed by another thread: no context
  // Step 2: context 7 allocates 250: live 350 < 400, not a new peak.
  memory.Record(0, 0x3000, 250, 7);
  memory.Publish();
  auto values = Snapshot(store);
  EXPECT_EQ(values["gpu_peak_live_bytes"][5].sum, 100);
  EXPECT_EQ(values["gpu_peak_live_bytes"][6].sum, 300);
  EXPECT_EQ(values["gpu_peak_live_bytes"].count(7), 0u);
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_peak_bytes"), "400");
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_live_bytes"), "350");

  // Step 3: a new, higher peak while still rising (no free yet) replaces
  // the earlier holders on the next publish; stale values are removed.
  memory.Record(0, 0x4000, 200, 7);  // live 550
  memory.Publish();
  values = Snapshot(store);
  EXPECT_EQ(values["gpu_peak_live_bytes"][5].sum, 100);
  EXPECT_EQ(values["gpu_peak_live_bytes"].count(6), 0u);
  EXPECT_EQ(values["gpu_peak_live_bytes"][7].sum, 450);
  EXPECT_EQ(values["gpu_peak_live_bytes"][7].count, 1u);  // set, not added
  double total = 0;
  for (const auto& [context, value] : values["gpu_peak_live_bytes"]) {
    total += value.sum;
  }
  EXPECT_EQ(total, 550);  // the tree's sum is the device's peak
}

// The holders of the peak, against a model that copies every context's live
// bytes whenever a peak is left (what the metrics did before keeping the
// values at the last peak per entry), over a forward-pass-like run: each
// step allocates an output that raises the peak and frees a temporary,
// across many contexts, some appearing only after the last peak.
TEST(MemoryMetrics, PeakHoldersMatchACopyTakenAtEveryPeakLeft) {
  MetricStore store;
  MemoryMetrics memory(store);
  std::map<ContextId, int64_t> live, at_peak;
  std::map<uint64_t, std::pair<ContextId, int64_t>> blocks;
  int64_t total = 0, peak = 0;
  bool at_new_peak = false;
  uint64_t seed = 12345, next_address = 0x1000;
  auto random = [&seed](uint64_t bound) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (seed >> 33) % bound;
  };
  auto allocate = [&](ContextId context, int64_t bytes) {
    const uint64_t address = next_address;
    next_address += 0x100;
    memory.Record(0, address, bytes, context);
    blocks[address] = {context, bytes};
    live[context] += bytes;
    total += bytes;
    if (total > peak) {
      peak = total;
      at_new_peak = true;
    }
  };
  auto free_one = [&]() {
    if (blocks.empty()) return;
    auto it = std::next(blocks.begin(), static_cast<long>(random(blocks.size())));
    if (at_new_peak) {
      at_peak = live;
      at_new_peak = false;
    }
    memory.Record(0, it->first, -it->second.second, 0);
    live[it->second.first] -= it->second.second;
    total -= it->second.second;
    blocks.erase(it);
  };
  for (int step = 0; step < 3000; ++step) {
    // Contexts 1-40 early, up to 200 later: new ones after many peaks.
    const ContextId context = 1 + random(step < 1500 ? 40 : 200);
    allocate(context, 1 + static_cast<int64_t>(random(1000)));
    if (random(3) != 0) free_one();
    if (step == 2990) {
      // Fall well below the peak: the last peak left is the one published.
      while (blocks.size() > 5) free_one();
    }
  }
  memory.Publish();
  auto values = Snapshot(store, 256);
  const auto& expected = at_new_peak ? live : at_peak;
  int64_t expected_total = 0;
  for (const auto& [context, bytes] : expected) {
    if (bytes <= 0) {
      EXPECT_EQ(values["gpu_peak_live_bytes"].count(context), 0u) << context;
      continue;
    }
    expected_total += bytes;
    EXPECT_EQ(values["gpu_peak_live_bytes"][context].sum, bytes) << context;
  }
  EXPECT_EQ(values["gpu_peak_live_bytes"].size(),
            static_cast<size_t>(std::count_if(expected.begin(), expected.end(),
                                              [](const auto& e) { return e.second > 0; })));
  EXPECT_EQ(expected_total, peak);
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_peak_bytes"), std::to_string(peak));
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_contexts"), std::to_string(live.size()));
}

TEST(MemoryMetrics, DevicesPeakIndependentlyAndHostIsSeparate) {
  MetricStore store;
  MemoryMetrics memory(store);
  memory.Record(0, 0x1000, 100, 5);
  memory.Record(1, 0x1000, 700, 6);  // same address, other device
  memory.Record(0, 0x1000, -100, 0);
  memory.Record(-1, 0x9000, 64, 8);
  memory.Publish();
  auto values = Snapshot(store);
  EXPECT_EQ(values["gpu_peak_live_bytes"][5].sum, 100);
  EXPECT_EQ(values["gpu_peak_live_bytes"][6].sum, 700);
  EXPECT_EQ(values["host_alloc_bytes"][8].sum, 64);
  EXPECT_EQ(values["host_peak_live_bytes"][8].sum, 64);
  EXPECT_EQ(MetadataValue(memory, "gpu1_memory_live_bytes"), "700");
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_live_bytes"), "0");
  EXPECT_EQ(MetadataValue(memory, "host_memory_peak_bytes"), "64");
}

TEST(MemoryMetrics, BlocksFreedAndAllocatedAgainKeepTheirOwnContexts) {
  // Freed blocks' bookkeeping is reused for later blocks: nothing of the
  // old block may leak into the new one.
  MetricStore store;
  MemoryMetrics memory(store);
  for (int round = 0; round < 3; ++round) {
    for (uint64_t i = 0; i < 8; ++i) memory.Record(0, 0x1000 * (i + 1), 10, 5);
    for (uint64_t i = 0; i < 8; ++i) memory.Record(0, 0x1000 * (i + 1), -10, 0);
  }
  // Context 6 takes new addresses (reusing the freed nodes), 7 an old one.
  memory.Record(0, 0x90000, 1000, 6);
  memory.Record(0, 0x1000, 2000, 7);
  memory.Publish();
  auto values = Snapshot(store);
  EXPECT_EQ(values["gpu_peak_live_bytes"][6].sum, 1000);
  EXPECT_EQ(values["gpu_peak_live_bytes"][7].sum, 2000);
  EXPECT_EQ(values["gpu_peak_live_bytes"].count(5), 0u);  // all freed
  memory.Record(0, 0x90000, -1000, 0);
  memory.Record(0, 0x1000, -2000, 0);
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_live_bytes"), "0");
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_peak_bytes"), "3000");
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_frees"), "26");
  EXPECT_EQ(MetadataValue(memory, "memory_frees_before_start"), "");
}

TEST(MemoryMetrics, FreesOfUnknownBlocksAreCountedNotSubtracted) {
  MetricStore store;
  MemoryMetrics memory(store);
  memory.Record(0, 0x5000, -4096, 0);  // allocated before profiling began
  memory.Record(0, 0x1000, 10, 5);
  EXPECT_EQ(MetadataValue(memory, "memory_frees_before_start"), "1");
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_live_bytes"), "10");
}

TEST(MemoryMetrics, AReusedAddressWithoutAFreeReplacesTheOldBlock) {
  MetricStore store;
  MemoryMetrics memory(store);
  memory.Record(0, 0x1000, 100, 5);
  memory.Record(0, 0x1000, 40, 6);  // the free of the first was not seen
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_live_bytes"), "40");
  memory.Record(0, 0x1000, -40, 0);
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_live_bytes"), "0");
}

TEST(MemoryMetrics, ResetPeaksKeepsLiveBlocksMatchable) {
  MetricStore store;
  MemoryMetrics memory(store);
  memory.Record(0, 0x1000, 1000, 5);
  memory.Record(0, 0x2000, 500, 6);
  memory.Record(0, 0x2000, -500, 0);
  store.Clear(64);
  memory.ResetPeaks();
  memory.Record(0, 0x1000, -1000, 0);  // still matched
  memory.Record(0, 0x3000, 200, 7);
  memory.Publish();
  auto values = Snapshot(store);
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_peak_bytes"), "1000");
  EXPECT_EQ(MetadataValue(memory, "memory_frees_before_start"), "");
  EXPECT_EQ(values["gpu_peak_live_bytes"][5].sum, 1000);
  EXPECT_EQ(values["gpu_peak_live_bytes"].count(7), 0u);
  EXPECT_EQ(values["gpu_alloc_bytes"].count(5), 0u);  // counted before reset
  EXPECT_EQ(values["gpu_alloc_bytes"][7].sum, 200);
}

TEST(MemoryMetrics, BlocksLiveBeforeProfilingCountInThePeakAndItsHolders) {
  // Weights (600 bytes) allocated before a profiled region; the region's
  // activations (300) peak on top of them.
  MetricStore store;
  MemoryMetrics memory(store);
  constexpr ContextId kBefore = 3;  // "[allocated before profiling]"
  memory.Record(0, 0x1000, 400, kBefore, DLMONITOR_MEMORY_PREEXISTING);
  memory.Record(0, 0x2000, 200, kBefore, DLMONITOR_MEMORY_PREEXISTING);
  memory.Record(0, 0x3000, 300, 5);
  memory.Record(0, 0x3000, -300, 0);
  memory.Record(0, 0x2000, -200, 0);  // a weight freed inside the region
  memory.Publish();
  auto values = Snapshot(store);
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_peak_bytes"), "900");
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_live_bytes"), "400");
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_before_profiling_bytes"), "600");
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_allocations"), "1");
  EXPECT_EQ(MetadataValue(memory, "memory_frees_before_start"), "");
  EXPECT_EQ(values["gpu_peak_live_bytes"][kBefore].sum, 600);
  EXPECT_EQ(values["gpu_peak_live_bytes"][5].sum, 300);
  // Not allocated while profiling: no allocation is charged for them.
  EXPECT_EQ(values["gpu_alloc_bytes"].count(kBefore), 0u);
}

TEST(MemoryMetrics, ABlockSeenAllocatedIsNotCountedAgainByTheSnapshot) {
  // The snapshot is taken after the hook is attached: a block allocated in
  // between is in both.
  MetricStore store;
  MemoryMetrics memory(store);
  memory.Record(0, 0x1000, 256, 5);
  memory.Record(0, 0x1000, 256, 3, DLMONITOR_MEMORY_PREEXISTING);
  memory.Record(0, 0x2000, 128, 3, DLMONITOR_MEMORY_PREEXISTING);
  memory.Publish();
  auto values = Snapshot(store);
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_peak_bytes"), "384");
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_before_profiling_bytes"), "128");
  EXPECT_EQ(values["gpu_peak_live_bytes"][5].sum, 256);
  EXPECT_EQ(values["gpu_peak_live_bytes"][3].sum, 128);
  memory.Record(0, 0x1000, -256, 0);
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_live_bytes"), "128");
}

TEST(MemoryMetrics, ReservedSegmentsAreTrackedApartFromBlocks) {
  MetricStore store;
  MemoryMetrics memory(store);
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_reserved_bytes"), "");
  const uint32_t kBeforeReserved =
      DLMONITOR_MEMORY_PREEXISTING | DLMONITOR_MEMORY_RESERVED;
  memory.Record(0, 0x10000, 2048, 0, kBeforeReserved);
  memory.Record(0, 0x20000, 4096, 0, DLMONITOR_MEMORY_RESERVED);
  memory.Record(0, 0x20000, 4096, 0, kBeforeReserved);  // in the snapshot too
  memory.Record(0, 0x10000, 512, 5);                     // a block in a segment
  memory.Record(0, 0x20000, -4096, 0, DLMONITOR_MEMORY_RESERVED);
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_reserved_peak_bytes"), "6144");
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_reserved_bytes"), "2048");
  // Segments are not blocks: allocated bytes are the block's alone.
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_peak_bytes"), "512");
  // An unmap of part of a mapping releases what it says.
  memory.Record(0, 0x10400, -1024, 0, DLMONITOR_MEMORY_RESERVED);
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_reserved_bytes"), "1024");
  memory.ResetPeaks();
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_reserved_peak_bytes"), "1024");
}

TEST(MemoryMetrics, ConcurrentAllocatorsOnSeveralDevicesBalance) {
  // Each device's allocator calls in from several threads at once.
  MetricStore store;
  MemoryMetrics memory(store);
  constexpr int kThreads = 4;
  constexpr int kBlocks = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&memory, t] {
      const int32_t device = t % 2;
      for (int i = 0; i < kBlocks; ++i) {
        const uint64_t address = (uint64_t{1} << 40) * (t + 1) + 512u * i;
        memory.Record(device, address, 512, 10 + t);
        if (i % 2 == 1) memory.Record(device, address - 512, -512, 0);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  memory.Publish();
  // Two threads per device, each leaving half its blocks live.
  const std::string live = std::to_string(2 * (kBlocks / 2) * 512);
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_live_bytes"), live);
  EXPECT_EQ(MetadataValue(memory, "gpu1_memory_live_bytes"), live);
  auto values = Snapshot(store);
  double allocated = 0;
  for (const auto& [context, value] : values["gpu_alloc_bytes"]) allocated += value.sum;
  EXPECT_EQ(allocated, kThreads * kBlocks * 512.0);
  double at_peaks = 0;
  for (const auto& [context, value] : values["gpu_peak_live_bytes"]) at_peaks += value.sum;
  EXPECT_EQ(at_peaks, std::stod(MetadataValue(memory, "gpu0_memory_peak_bytes")) +
                          std::stod(MetadataValue(memory, "gpu1_memory_peak_bytes")));
}

// Events are accounted for through a queue: a block freed on another
// thread than the one that allocated it, with a third thread draining,
// must meet its allocation first, whatever the queue's state.
TEST(MemoryMetrics, BlocksFreedOnAnotherThreadMatchTheirAllocations) {
  MetricStore store;
  MemoryMetrics memory(store);
  constexpr uint64_t kBlocks = 3 * MemoryEventQueue::kCapacity + 11;
  std::vector<std::atomic<bool>> allocated(kBlocks);
  std::atomic<bool> done{false};
  std::thread drainer([&] {
    while (!done.load()) memory.Drain();
  });
  std::thread freer([&] {
    for (uint64_t i = 0; i < kBlocks; ++i) {
      while (!allocated[i].load(std::memory_order_acquire)) std::this_thread::yield();
      memory.Record(0, 0x100000 + 512 * i, -512, 0);
    }
  });
  for (uint64_t i = 0; i < kBlocks; ++i) {
    memory.Record(0, 0x100000 + 512 * i, 512, 7);
    allocated[i].store(true, std::memory_order_release);
  }
  freer.join();
  done.store(true);
  drainer.join();
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_live_bytes"), "0");
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_frees"), std::to_string(kBlocks));
  EXPECT_EQ(MetadataValue(memory, "memory_frees_before_start"), "");
}

// With nobody draining, a full queue is drained by the thread that found
// it full: no event is lost or applied out of turn.
TEST(MemoryMetrics, AFullQueueIsDrainedByItsProducer) {
  MetricStore store;
  MemoryMetrics memory(store);
  constexpr uint64_t kBlocks = 2 * MemoryEventQueue::kCapacity + 5;
  for (uint64_t i = 0; i < kBlocks; ++i) {
    memory.Record(0, 0x100000 + 512 * i, 512, 1 + i % 3);
    if (i % 2 == 1) memory.Record(0, 0x100000 + 512 * (i - 1), -512, 0);
  }
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_allocations"), std::to_string(kBlocks));
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_frees"), std::to_string(kBlocks / 2));
  EXPECT_EQ(MetadataValue(memory, "gpu0_memory_live_bytes"),
            std::to_string((kBlocks - kBlocks / 2) * 512));
}

// A fork while another thread drains (the sampler's, each tick): the
// child's copy of the lock must not be held by a thread the child lacks.
// Each child records an event and reads it back under an alarm.
TEST(MemoryMetrics, AForkWhileDrainingLeavesTheChildUsable) {
  MetricStore store;
  MemoryMetrics memory(store);
  std::atomic<bool> done{false};
  std::thread drainer([&] {
    uint64_t address = 0x100000;
    while (!done.load()) {
      // Long drains: the lock is held most of the time.
      for (int i = 0; i < 1000; ++i) {
        memory.Record(0, address, 512, 3 + i % 50);
        memory.Record(0, address, -512, 0);
        address += 512;
      }
      memory.Drain();
    }
  });
  for (int i = 0; i < 50; ++i) {
    memory.ForkPrepare();
    const pid_t child = fork();
    if (child == 0) {
      alarm(10);  // a lock held forever ends the child here
      memory.ForkChild();
      memory.Record(1, 0x4000, 1024, 9);
      _exit(MetadataValue(memory, "gpu1_memory_live_bytes") == "1024" &&
                    MetadataValue(memory, "gpu0_memory_allocations").empty()
                ? 0
                : 1);
    }
    memory.ForkParent();
    ASSERT_GT(child, 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "child " << i << " status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 0) << i;
  }
  done.store(true);
  drainer.join();
}

}  // namespace
}  // namespace deepcontext::profiler
