// CPU cost of the runtime's per-event work, without a framework or a GPU:
// what one framework op (entry + exit) costs in each CPU-time mode, and
// what the allocator events a framework reports inside an op add.
//
//     build/bin/event_cost [ops per round (200000)] [rounds (7)] [only]
//
// `only` keeps the configurations whose name contains it (and the two "no
// profiler" baselines), e.g. to profile one of them with perf.
// Each op is reported through the public DLMonitor ABI as an adapter does
// (tests/unit/runtime/emit_op.h). The configurations run interleaved in
// rounds, and the median nanoseconds per op are printed:
//   no profiler              ops reported while no session runs
//   ops, sampled CPU time    the default
//   ops, exact CPU time      deepcontext_set_op_cpu_time(1)
//   ops, no CPU time         deepcontext_set_op_cpu_time(0)
//   ops + 1 alloc + 1 free   default mode, a block allocated and freed inside
//                            every op, as a tensor op's output and temporary
//   native: ops              default mode with native frames (--native), ops
//                            reported 40 frames deep, as below an interpreter
//                            and a dispatcher
//   native: ops + 1 GPU API call
//                            the same, plus a GPU API call's context query 25
//                            frames deeper inside every op, as a launch
//                            through the driver asks it (run it with
//                            DEEPCONTEXT_UNWINDER=cfi-cache, the unwinder of
//                            machines without libunwind)
//   native: ops + 2 GPU API calls, two paths
//                            the same, with two calls per op reached
//                            through two different chains of 25 frames, as
//                            an op launches two kernels from two places:
//                            neither call meets the previous one near its
//                            innermost frames, so each unwinds its chain
//   native: ops + 2 GPU API calls, two call sites
//                            the same, both calls through the same chain,
//                            from two call sites of the op: the calls share
//                            all but the frames outer of the chain
//   ... cold caches          the same with 1 MiB of other memory read
//                            between ops, as a framework's own work between
//                            two ops evicts the profiler's per-thread state
//                            from the L1 and L2 caches; each op is timed
//                            alone, against "no profiler, cold caches"
//   clock: 2 counter reads
//   clock: 2 CLOCK_MONOTONIC reads
//                            no ops: the two reads of the CPU's counter
//                            (rdtsc, CNTVCT_EL0) or of CLOCK_MONOTONIC that
//                            an op's entry and exit make for its wall time
//                            (runtime/cpu/tsc_clock.h; the profile's
//                            op_wall_clock metadata names the one a run
//                            used): the part of an op's cost that no
//                            bookkeeping around them can save. Their
//                            "added" is the reads alone.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/cold_caches.h"
#include "bench/median.h"
#include "deepcontext/profiler.h"
#include "runtime/cpu/clocks.h"
#include "runtime/cpu/tsc_clock.h"
#include "tests/unit/runtime/emit_op.h"

namespace {

using deepcontext::testing::EmitMemory;
using deepcontext::testing::EmitOp;

// A few op names, as a model's ops alternate between them.
constexpr const char* kOpNames[] = {"aten::linear", "aten::relu", "aten::add",
                                    "aten::empty"};
// The same count of names as backward functions report them.
constexpr const char* kBackwardNames[] = {"AddmmBackward0", "ReluBackward0",
                                          "AddBackward0", "TBackward0"};

// Rows that time the wall clock's reads instead of ops.
enum class ClockReads { kNone, kCounter, kMonotonic };

struct Config {
  const char* name;
  int cpu_time_mode;  // -1: no session
  bool memory;
  bool native = false;
  bool gpu_api_call = false;
  // A second call per op: through AtDepthOther's chain, or through
  // AtDepth's again from another call site.
  bool two_paths = false;
  bool two_call_sites = false;
  // Evict the caches between ops (bench/cold_caches.h).
  bool cold = false;
  // Op names built per call in one buffer, as torch names backward
  // functions (the name lives in the RecordFunction, on the stack).
  bool names_per_call = false;
  ClockReads clock = ClockReads::kNone;

  // The rows the others' "added" is taken against.
  bool baseline() const { return cpu_time_mode < 0 && clock == ClockReads::kNone; }
};

// Two reads of the clock per op, as an op's entry and exit read it.
double ClockNsPerOp(ClockReads clock, int ops) {
  const deepcontext::bench::ColdCaches warm(false);
  uint64_t sum = 0;
  const double ns = warm.TimeNs(ops, [&](int) {
    if (clock == ClockReads::kCounter) {
      sum += deepcontext::cpu::TscClock::ReadCounter();
      sum += deepcontext::cpu::TscClock::ReadCounter();
    } else {
      sum += static_cast<uint64_t>(deepcontext::cpu::MonotonicNs());
      sum += static_cast<uint64_t>(deepcontext::cpu::MonotonicNs());
    }
  });
  asm volatile("" ::"r"(sum) : "memory");
  return ns / ops;
}

// Frames between main and an op's report, and between the op and a GPU API
// call's callback, as a framework and a driver put them there.
constexpr int kOpDepth = 40;
constexpr int kGpuApiDepth = 25;

__attribute__((noinline)) void AtDepth(int depth, const std::function<void()>& body) {
  if (depth <= 0) {
    body();
  } else {
    AtDepth(depth - 1, body);
  }
  asm volatile("" ::: "memory");  // no tail call: every level is a frame
}

// AtDepth's twin: the same depth through other return addresses (the
// extra instruction keeps the linker from folding the two).
__attribute__((noinline)) void AtDepthOther(int depth, const std::function<void()>& body) {
  asm volatile("nop" ::: "memory");
  if (depth <= 0) {
    body();
  } else {
    AtDepthOther(depth - 1, body);
  }
  asm volatile("" ::: "memory");
}

double NativeNsPerOp(const Config& config, int ops) {
  deepcontext_start();
  deepcontext_set_op_cpu_time(config.cpu_time_mode);
  dlmonitor_native_enable(1);
  const std::function<void()> gpu_api_call = [] {
    dlmonitor_context_t context = 0;
    dlmonitor_context_current(&context);
  };
  const deepcontext::bench::ColdCaches cold(config.cold);
  double ns = 0;
  AtDepth(kOpDepth, [&] {
    ns = cold.TimeNs(ops, [&](int i) {
           const uint64_t id = static_cast<uint64_t>(i) + 1;
           EmitOp(kOpNames[i % 4], id, DLMONITOR_PHASE_ENTER);
           if (config.gpu_api_call) AtDepth(kGpuApiDepth, gpu_api_call);
           if (config.two_paths) AtDepthOther(kGpuApiDepth, gpu_api_call);
           if (config.two_call_sites) AtDepth(kGpuApiDepth, gpu_api_call);
           EmitOp(kOpNames[i % 4], id, DLMONITOR_PHASE_EXIT);
         }) /
         ops;
  });
  dlmonitor_native_enable(0);
  deepcontext_stop();
  return ns;
}

double NsPerOp(const Config& config, int ops) {
  if (config.clock != ClockReads::kNone) return ClockNsPerOp(config.clock, ops);
  if (config.native) return NativeNsPerOp(config, ops);
  if (config.cpu_time_mode >= 0) {
    deepcontext_start();
    deepcontext_set_op_cpu_time(config.cpu_time_mode);
  }
  // Live blocks keep a steady footprint, as in a training step.
  constexpr uintptr_t kBase = 0x7f0000000000;
  const deepcontext::bench::ColdCaches cold(config.cold);
  char built[32];
  auto one_op = [&](int i) {
    const uint64_t id = static_cast<uint64_t>(i) + 1;
    const char* name = kOpNames[i % 4];
    if (config.names_per_call) {
      std::strcpy(built, kBackwardNames[i % 4]);
      asm volatile("" : : "r"(built) : "memory");
      name = built;
    }
    EmitOp(name, id, DLMONITOR_PHASE_ENTER);
    if (config.memory) {
      const uintptr_t address = kBase + static_cast<uintptr_t>(i % 512) * 4096;
      EmitMemory(0, address, 4096);
      EmitMemory(0, address, -4096);
    }
    EmitOp(name, id, DLMONITOR_PHASE_EXIT);
  };
  const double ns = cold.TimeNs(ops, one_op);
  if (config.cpu_time_mode >= 0) deepcontext_stop();
  return ns / ops;
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
           Config{"ops named per call in one buffer (default mode)", 2, false, false, false,
                  false, false, false, true},
           Config{"no profiler, cold caches", -1, false, false, false, false, false, true},
           Config{"ops, cold caches (default mode)", 2, false, false, false, false, false,
                  true},
           Config{"ops + 1 alloc + 1 free each, cold caches", 2, true, false, false, false,
                  false, true},
           Config{"native: ops", 2, false, true, false},
           Config{"native: ops + 1 GPU API call", 2, false, true, true},
           Config{"native: ops + 2 GPU API calls, two paths", 2, false, true, true, true},
           Config{"native: ops + 2 GPU API calls, two call sites", 2, false, true, true, false,
                  true},
           Config{"native: ops + 1 GPU API call, cold caches", 2, false, true, true, false,
                  false, true},
           Config{"clock: 2 counter reads", -1, false, false, false, false, false, false,
                  false, ClockReads::kCounter},
           Config{"clock: 2 CLOCK_MONOTONIC reads", -1, false, false, false, false, false,
                  false, false, ClockReads::kMonotonic},
       }) {
    if (config.baseline() || std::string(config.name).find(only) != std::string::npos) {
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
  // "added" is against the baseline with the same caches.
  double base[2] = {0, 0};
  for (size_t i = 0; i < configs.size(); ++i) {
    if (configs[i].baseline()) base[configs[i].cold] = deepcontext::bench::Median(samples[i]);
  }
  for (size_t i = 0; i < configs.size(); ++i) {
    const double median = deepcontext::bench::Median(samples[i]);
    const double against = configs[i].clock == ClockReads::kNone ? base[configs[i].cold] : 0;
    std::printf("| %s | %.1f | %+.1f |\n", configs[i].name, median, median - against);
  }
  return 0;
}
