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
// launch and per record for several batch sizes.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "deepcontext/dlmonitor.h"
#include "runtime/cupti/gpu_attribution.h"
#include "runtime/cupti/metric_store_sink.h"
#include "runtime/profiler/metric_store.h"

namespace {

using deepcontext::cupti::GpuAttribution;
using deepcontext::cupti::KernelRecord;
using deepcontext::cupti::LaunchRecord;
using deepcontext::cupti::MetricStoreSink;

constexpr const char* kKernelNames[] = {"_Z10gemm_kernelv", "_Z12relu_forwardv",
                                        "_Z11add_tensorsv", "_Z9reduce_opv"};

struct Result {
  double ns_per_launch = 0;
  double ns_per_record = 0;
};

// One round: the main thread launches; a worker credits each batch of
// `batch` records once all its launches were made.
Result Round(GpuAttribution& attribution, uint64_t first_id, int launches, int batch,
             dlmonitor_context_t context) {
  std::atomic<int64_t> launched{0};
  std::atomic<bool> done{false};
  double record_ns = 0;
  std::thread worker([&] {
    int64_t credited = 0;
    const auto start = std::chrono::steady_clock::now();
    std::chrono::duration<double, std::nano> busy{0};
    while (credited < launches) {
      const int64_t ready = launched.load(std::memory_order_acquire);
      if (ready - credited < batch && ready < launches) {
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
    (void)start;
    record_ns = busy.count() / launches;
    done.store(true, std::memory_order_release);
  });
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) {
    LaunchRecord launch;
    launch.correlation_id = first_id + static_cast<uint64_t>(i);
    launch.context = context;
    launch.api_name = "cuLaunchKernel";
    launch.thread = 1;
    attribution.OnLaunch(launch);
    // Published now and then, as a completed buffer would: a store per
    // launch to a line the worker polls would be timed too.
    if ((i + 1) % 256 == 0 || i + 1 == launches) {
      launched.store(i + 1, std::memory_order_release);
    }
  }
  const std::chrono::duration<double, std::nano> elapsed =
      std::chrono::steady_clock::now() - start;
  worker.join();
  return Result{elapsed.count() / launches, record_ns};
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
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
  const int batches[] = {512, 4096, 38800};
  std::vector<std::vector<double>> launch_ns(std::size(batches));
  std::vector<std::vector<double>> record_ns(std::size(batches));
  uint64_t next_id = 1;
  for (int round = 0; round < rounds; ++round) {
    for (size_t b = 0; b < std::size(batches); ++b) {
      const Result result = Round(attribution, next_id, launches, batches[b], context);
      next_id += static_cast<uint64_t>(launches);
      launch_ns[b].push_back(result.ns_per_launch);
      record_ns[b].push_back(result.ns_per_record);
    }
  }
  std::printf("| records per batch | ns per launch (launching thread) | ns per record "
              "(processing thread) |\n|---|---|---|\n");
  for (size_t b = 0; b < std::size(batches); ++b) {
    std::printf("| %d | %.1f | %.1f |\n", batches[b], Median(launch_ns[b]),
                Median(record_ns[b]));
  }
  dlmonitor_finalize();
  return 0;
}
