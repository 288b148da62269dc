// CPU cost of the runtime's per-event work, without a framework or a GPU:
// what one framework op (entry + exit) costs in each CPU-time mode, and
// what the allocator events a framework reports inside an op add.
//
//     build/bin/event_cost [ops per round (200000)] [rounds (7)] [only]
//
// `only` keeps the configurations whose name contains it (and "no
// profiler"), e.g. to profile one of them with perf.
// Each op is reported through the public DLMonitor ABI as an adapter does
// (tests/unit/runtime/emit_op.h). The configurations run interleaved in
// rounds, and the median nanoseconds per op are printed:
//   no profiler              ops reported while no session runs
//   ops, sampled CPU time    the default
//   ops, exact CPU time      deepcontext_set_op_cpu_time(1)
//   ops, no CPU time         deepcontext_set_op_cpu_time(0)
//   ops + 1 alloc + 1 free   default mode, a block allocated and freed inside
//                            every op, as a tensor op's output and temporary
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/median.h"
#include "deepcontext/profiler.h"
#include "tests/unit/runtime/emit_op.h"

namespace {

using deepcontext::testing::EmitMemory;
using deepcontext::testing::EmitOp;

// A few op names, as a model's ops alternate between them.
constexpr const char* kOpNames[] = {"aten::linear", "aten::relu", "aten::add",
                                    "aten::empty"};

struct Config {
  const char* name;
  int cpu_time_mode;  // -1: no session
  bool memory;
};

double NsPerOp(const Config& config, int ops) {
  if (config.cpu_time_mode >= 0) {
    deepcontext_start();
    deepcontext_set_op_cpu_time(config.cpu_time_mode);
  }
  // Live blocks keep a steady footprint, as in a training step.
  constexpr uintptr_t kBase = 0x7f0000000000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < ops; ++i) {
    const uint64_t id = static_cast<uint64_t>(i) + 1;
    EmitOp(kOpNames[i % 4], id, DLMONITOR_PHASE_ENTER);
    if (config.memory) {
      const uintptr_t address = kBase + static_cast<uintptr_t>(i % 512) * 4096;
      EmitMemory(0, address, 4096);
      EmitMemory(0, address, -4096);
    }
    EmitOp(kOpNames[i % 4], id, DLMONITOR_PHASE_EXIT);
  }
  const auto end = std::chrono::steady_clock::now();
  if (config.cpu_time_mode >= 0) deepcontext_stop();
  return std::chrono::duration<double, std::nano>(end - start).count() / ops;
}

}  // namespace

int main(int argc, char** argv) {
  const int ops = argc > 1 ? std::atoi(argv[1]) : 200000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  if (ops <= 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: %s [ops per round > 0] [rounds > 0] [only]\n", argv[0]);
    return 2;
  }
  const std::string only = argc > 3 ? argv[3] : "";
  std::vector<Config> configs;
  for (const Config& config : {
           Config{"no profiler", -1, false},
           Config{"ops, sampled CPU time (default)", 2, false},
           Config{"ops, exact CPU time", 1, false},
           Config{"ops, no CPU time", 0, false},
           Config{"ops + 1 alloc + 1 free each (default mode)", 2, true},
       }) {
    if (config.cpu_time_mode < 0 || std::string(config.name).find(only) != std::string::npos) {
      configs.push_back(config);
    }
  }
  std::vector<std::vector<double>> samples(configs.size());
  for (const Config& config : configs) NsPerOp(config, ops / 10);  // warm up
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < configs.size(); ++i) {
      samples[i].push_back(NsPerOp(configs[i], ops));
    }
  }
  std::printf("| configuration | ns per op (median of %d x %d) | added |\n", rounds, ops);
  std::printf("|---|---|---|\n");
  double base = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    const double median = deepcontext::bench::Median(samples[i]);
    if (i == 0) base = median;
    std::printf("| %s | %.1f | %+.1f |\n", configs[i].name, median, median - base);
  }
  return 0;
}
