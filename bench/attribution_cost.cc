// CPU cost of attributing GPU work, without a GPU: what one launch costs the
// launching thread at API entry (GpuAttribution::OnLaunch, into the
// correlation table) and what its activity record costs the processing
// thread (OnKernel), when records arrive in batches of B on another thread
// as CUPTI delivers them, one completed activity buffer at a time.
//
//     build/bin/attribution_cost [launches per round (400000)] [rounds (5)]
//
// An 8 MiB buffer holds about 38800 kernel records (216 bytes each with
// CUDA 13.0), so that many launches wait in the table before their records
// come; smaller buffers come back sooner. Prints the median nanoseconds per
// launch and per record for several batch sizes, and for two threads
// launching at once. On a machine with fewer than four cores the
// two-thread row shares cores and says little.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "bench/median.h"
#include "deepcontext/dlmonitor.h"
#include "runtime/gpu/gpu_attribution.h"
#include "runtime/profiler/metric_store.h"
#include "runtime/profiler/metric_store_sink.h"

namespace {

using deepcontext::bench::Median;

using deepcontext::gpu::GpuAttribution;
using deepcontext::gpu::KernelRecord;
using deepcontext::gpu::LaunchRecord;
using deepcontext::profiler::MetricStoreSink;

constexpr const char* kKernelNames[] = {"_Z10gemm_kernelv", "_Z12relu_forwardv",
                                        "_Z11add_tensorsv", "_Z9reduce_opv"};

struct Result {
  double ns_per_launch = 0;
  double ns_per_record = 0;
};

// One round: `threads` launching threads take correlation ids in turn (as
// the driver hands them out when several threads launch at once: thread t
// gets ids first_id + t, + t + threads, ...); a worker credits each batch of
// `batch` records once all its launches were made.
Result Round(GpuAttribution& attribution, uint64_t first_id, int launches, int batch,
             int threads, dlmonitor_context_t context) {
  std::vector<std::atomic<int64_t>> progress(static_cast<size_t>(threads));
  for (auto& value : progress) value.store(0);
  const int64_t per_thread = launches / threads;
  const int64_t total = per_thread * threads;
  double record_ns = 0;
  // Launches made so far with no gap: every thread made its first n.
  auto contiguous = [&] {
    int64_t least = per_thread;
    for (auto& value : progress) least = std::min(least, value.load(std::memory_order_acquire));
    int64_t made = least * threads;
    for (int t = 0; t < threads && least < per_thread; ++t) {
      if (progress[static_cast<size_t>(t)].load(std::memory_order_acquire) > least) ++made;
      else break;
    }
    return made;
  };
  std::thread worker([&] {
    int64_t credited = 0;
    std::chrono::duration<double, std::nano> busy{0};
    while (credited < total) {
      const int64_t ready = contiguous();
      if (ready - credited < batch && ready < total) {
        __builtin_ia32_pause();  // spin: a system call here would be timed too
        continue;
      }
      const int64_t end = std::min<int64_t>(credited + batch, ready);
      const auto begin = std::chrono::steady_clock::now();
      for (int64_t i = credited; i < end; ++i) {
        KernelRecord record;
        record.correlation_id = first_id + static_cast<uint64_t>(i);
        record.start_ns = 1000 + static_cast<uint64_t>(i) * 10;
        record.end_ns = record.start_ns + 5;
        record.name = kKernelNames[i % 4];
        record.grid_x = record.grid_y = record.grid_z = 1;
        record.block_x = 128;
        record.block_y = record.block_z = 1;
        attribution.OnKernel(record);
      }
      busy += std::chrono::steady_clock::now() - begin;
      credited = end;
    }
    record_ns = busy.count() / static_cast<double>(total);
  });
  auto launch = [&](int t) {
    for (int64_t k = 0; k < per_thread; ++k) {
      LaunchRecord record;
      record.correlation_id = first_id + static_cast<uint64_t>(k * threads + t);
      record.context = context;
      record.api_name = "cuLaunchKernel";
      record.thread = static_cast<uint64_t>(t) + 1;
      attribution.OnLaunch(record);
      // Published now and then, as a completed buffer would: a store per
      // launch to a line the worker polls would be timed too.
      if ((k + 1) % 256 == 0 || k + 1 == per_thread) {
        progress[static_cast<size_t>(t)].store(k + 1, std::memory_order_release);
      }
    }
  };
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> launchers;
  for (int t = 1; t < threads; ++t) launchers.emplace_back(launch, t);
  launch(0);
  for (auto& thread : launchers) thread.join();
  const std::chrono::duration<double, std::nano> elapsed =
      std::chrono::steady_clock::now() - start;
  worker.join();
  // Per launch of one thread: the threads launch side by side.
  return Result{elapsed.count() / static_cast<double>(per_thread), record_ns};
}

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 400000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  if (launches <= 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: %s [launches per round] [rounds]\n", argv[0]);
    return 2;
  }
  if (dlmonitor_init() != DLMONITOR_OK) return 1;
  dlmonitor_context_t context = 0;
  dlmonitor_context_current(&context);
  deepcontext::profiler::MetricStore store;
  MetricStoreSink sink(store);
  GpuAttribution attribution(sink);
  struct Config {
    int batch;
    int threads;
  };
  const Config configs[] = {{512, 1}, {4096, 1}, {38800, 1}, {4096, 2}};
  std::vector<std::vector<double>> launch_ns(std::size(configs));
  std::vector<std::vector<double>> record_ns(std::size(configs));
  uint64_t next_id = 1;
  for (int round = 0; round < rounds; ++round) {
    for (size_t c = 0; c < std::size(configs); ++c) {
      const Result result = Round(attribution, next_id, launches, configs[c].batch,
                                  configs[c].threads, context);
      next_id += static_cast<uint64_t>(launches);
      launch_ns[c].push_back(result.ns_per_launch);
      record_ns[c].push_back(result.ns_per_record);
    }
  }
  std::printf("| records per batch | launching threads | ns per launch (each launching "
              "thread) | ns per record (processing thread) |\n|---|---|---|---|\n");
  for (size_t c = 0; c < std::size(configs); ++c) {
    std::printf("| %d | %d | %.1f | %.1f |\n", configs[c].batch, configs[c].threads,
                Median(launch_ns[c]), Median(record_ns[c]));
  }
  dlmonitor_finalize();
  return 0;
}
