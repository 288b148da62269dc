// CPU cost of an allocator event against the number of contexts that ever
// allocated on the device, in the pattern of a forward pass: every op's
// output raises the device's peak and the free of its temporary leaves it.
// Leaving a peak used to copy every context's live bytes, so the cost per
// event grew with the contexts (thousands with native frames); the ratio
// column says whether it still does.
//
//   memory_peak_cost [rounds]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/median.h"
#include "runtime/profiler/memory_metrics.h"
#include "runtime/profiler/metric_store.h"

namespace {

using deepcontext::profiler::MemoryMetrics;
using deepcontext::profiler::MetricStore;

// ns per event over `ops` forward-like ops spread over `contexts`.
double NsPerEvent(int contexts, int ops) {
  MetricStore store;
  MemoryMetrics memory(store);
  uint64_t address = 0x10000;
  // Every context allocated once (the map holds them all).
  for (int c = 1; c <= contexts; ++c) memory.Record(0, address += 0x100, 64, c);
  const auto start = std::chrono::steady_clock::now();
  for (int op = 0; op < ops; ++op) {
    const auto context = static_cast<deepcontext::profiler::ContextId>(1 + op % contexts);
    memory.Record(0, address += 0x100, 4096, context);   // the output: a new peak
    const uint64_t temporary = address += 0x100;
    memory.Record(0, temporary, 1024, context);          // a temporary
    memory.Record(0, temporary, -1024, 0);               // its free leaves the peak
  }
  const double ns = std::chrono::duration<double, std::nano>(
                        std::chrono::steady_clock::now() - start).count();
  return ns / (3.0 * ops);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const int sizes[] = {100, 1000, 10000};
  constexpr int kOps = 20000;
  std::vector<double> results[3];
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < 3; ++i) results[i].push_back(NsPerEvent(sizes[i], kOps));
  }
  const double base = deepcontext::bench::Median(results[0]);
  std::printf("Allocator events in a forward-pass pattern (alloc output, alloc and free a "
              "temporary per op), %d ops, median of %d rounds\n", kOps, rounds);
  std::printf("| contexts that allocated | ns per event | ratio to 100 contexts |\n|---|---|---|\n");
  for (int i = 0; i < 3; ++i) {
    const double ns = deepcontext::bench::Median(results[i]);
    std::printf("| %d | %.0f | %.2fx |\n", sizes[i], ns, ns / base);
  }
  return 0;
}
