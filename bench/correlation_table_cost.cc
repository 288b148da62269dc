// CPU cost of the correlation table alone (runtime/gpu/correlation_table.h):
//
//     build/bin/correlation_table_cost [--benchmark_repetitions=3 ...]
//
//   AddLaunch/B      the insert a launching thread makes at API entry, B
//                    launches in a row (timed) whose records then come
//                    (untimed); per_launch is the time of one.
//   Claim/B          the claim of each of B waiting launches' records, as
//                    the activity-processing thread makes it.
//   LaunchClaim/W    one launch and one claim per step, W launches waiting
//                    for records (an 8 MiB activity buffer holds about
//                    38800 kernel records).
//   Stragglers/W     the same with one launch in 64 never getting its
//                    record (a kind not traced), with a bound of 65536
//                    launches, so the oldest are evicted now and then.
// heap_MiB: what the table holds on the heap at the end (malloc's count).
// In one thread: bench/attribution_cost.cc measures attribution with
// records arriving on another thread. To compare with another build's
// table, run both binaries (or bench/fake_launch_cost, the whole launch
// callback) one after the other, several times.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <chrono>
#include <cstdint>

#include "runtime/gpu/correlation_table.h"

namespace {

using deepcontext::gpu::LaunchInfo;
using deepcontext::gpu::LaunchRecord;
using Table = deepcontext::gpu::CorrelationTable;

constexpr size_t kMaxLaunches = size_t{1} << 20;  // AttributionOptions' default
constexpr size_t kMaxParked = size_t{1} << 16;

LaunchRecord Launch(uint64_t id) {
  LaunchRecord launch;
  launch.correlation_id = id;
  launch.context = id;
  launch.api_name = "cuLaunchKernel";
  launch.thread = 1;
  return launch;
}

void PerItem(benchmark::State& state, int64_t items_per_iteration, const char* name) {
  state.counters[name] = benchmark::Counter(
      static_cast<double>(state.iterations() * items_per_iteration),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

enum class Timed { kInserts, kClaims };

// Inserts a batch of launches, then claims them all; only one half is timed.
void InsertThenClaim(benchmark::State& state, Timed timed) {
  const int64_t batch = state.range(0);
  Table table(kMaxLaunches, kMaxParked);
  uint64_t next = 1;
  LaunchInfo info;
  for (auto _ : state) {
    const uint64_t first = next;
    const auto inserts = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < batch; ++i) table.AddLaunch(Launch(next++));
    const auto claims = std::chrono::steady_clock::now();
    for (uint64_t id = first; id < next; ++id) {
      benchmark::DoNotOptimize(table.Claim(id, &info));
    }
    const auto end = std::chrono::steady_clock::now();
    const auto timed_span = timed == Timed::kInserts ? claims - inserts : end - claims;
    state.SetIterationTime(std::chrono::duration<double>(timed_span).count());
  }
  PerItem(state, batch, timed == Timed::kInserts ? "per_launch" : "per_claim");
}

void AddLaunch(benchmark::State& state) { InsertThenClaim(state, Timed::kInserts); }
void Claim(benchmark::State& state) { InsertThenClaim(state, Timed::kClaims); }

void LaunchClaim(benchmark::State& state, uint64_t straggler_every, size_t max_launches) {
  const auto window = static_cast<uint64_t>(state.range(0));
  const size_t heap_before = mallinfo2().uordblks;
  Table table(max_launches, kMaxParked);
  uint64_t next = 1;
  for (; next <= window; ++next) table.AddLaunch(Launch(next));
  LaunchInfo info;
  for (auto _ : state) {
    table.AddLaunch(Launch(next));
    const uint64_t answered = next - window;
    if (straggler_every == 0 || answered % straggler_every != 0) {
      benchmark::DoNotOptimize(table.Claim(answered, &info));
    }
    ++next;
  }
  PerItem(state, 1, "per_launch");
  state.counters["evicted"] = static_cast<double>(table.evicted());
  state.counters["heap_MiB"] =
      static_cast<double>(mallinfo2().uordblks - heap_before) / (1 << 20);
}

void LaunchClaimAll(benchmark::State& state) {
  LaunchClaim(state, 0, kMaxLaunches);
}
void Stragglers(benchmark::State& state) {
  LaunchClaim(state, 64, size_t{1} << 16);
}

BENCHMARK(AddLaunch)->Arg(4096)->Arg(38800)->UseManualTime();
BENCHMARK(Claim)->Arg(4096)->Arg(38800)->UseManualTime();
BENCHMARK(LaunchClaimAll)->Arg(512)->Arg(4096)->Arg(38800);
// Past the bound twice.
BENCHMARK(Stragglers)->Arg(4096)->Arg(38800)->Iterations(8 << 20);

}  // namespace

BENCHMARK_MAIN();
