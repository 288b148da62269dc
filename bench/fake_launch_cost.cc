// CPU cost of a kernel launch's CUPTI callbacks in the GPU backend
// (runtime/cupti/api_callbacks.cc and what it calls), without a GPU: the
// launches go through the fake CUPTI and driver of the unit tests
// (tests/unit/runtime/cupti/fake_cupti.h), which call the backend's
// subscriber at the launch's entry and exit as CUPTI does, with a kernel
// name as long as PyTorch's.
//
//     build/bin/fake_launch_cost [launches per round (100000)] [rounds (9)] [only]
//
// Configurations, interleaved in rounds (median nanoseconds per launch):
//   untraced            the launch callback off: the fake's own cost
//   traced              the backend's callbacks, no op open
//   traced, in an op    the same inside a framework op reported through
//                       the DLMonitor ABI (entry and exit counted too)
//   op, untraced        that op with the launch callback off
//   ..., cold caches    the in-op pair with 1 MiB of other memory read
//                       before each launch (bench/cold_caches.h), each
//                       launch timed alone
// "traced" minus "untraced" is the backend's per-launch work; the in-op
// pair adds the context query an op's launch makes. `only` keeps the
// traced configurations whose name contains it, and every untraced
// baseline. The kernels' records arrive after each round, untimed (CUPTI
// hands them to another thread).
#include <cupti.h>
#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/cold_caches.h"
#include "bench/median.h"
#include "deepcontext/dlmonitor.h"
#include "runtime/cupti/cupti_loader.h"
#include "runtime/cupti/gpu_backend_state.h"
#include "tests/unit/runtime/cupti/fake_cupti.h"
#include "tests/unit/runtime/emit_op.h"
#include "tests/unit/runtime/gpu/fake_context_sink.h"

namespace {

using deepcontext::bench::Median;
namespace cupti = deepcontext::cupti;
namespace fake = deepcontext::cupti::fake;

// A kernel name as long as PyTorch's templated ones, CUPTI's symbolName.
constexpr char kKernelName[] =
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EE"
    "EEviT0_T1_NS0_6memory12LoadWithCastILi2EEENS7_13StoreWithCastILi1EEEZNS0_23gpu_kernel_impl"
    "_nocastINS0_13BinaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorItera"
    "torBaseERKT_EUlifE_";

template <typename Function>
Function Driver(void* handle, const char* name) {
  return reinterpret_cast<Function>(dlsym(handle, name));
}

void SetLaunchTraced(bool traced, bool* was_traced) {
  fake::FakeCuptiState& state = fake::FakeCupti();
  std::lock_guard<std::mutex> guard(state.mutex);
  constexpr CUpti_CallbackId kLaunch = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  if (was_traced != nullptr) *was_traced = state.driver_callbacks.count(kLaunch) > 0;
  if (traced) {
    state.driver_callbacks.insert(kLaunch);
  } else {
    state.driver_callbacks.erase(kLaunch);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 100000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
  if (launches <= 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: %s [launches per round] [rounds] [only]\n", argv[0]);
    return 2;
  }
  const std::string only = argc > 3 ? argv[3] : "";
  setenv("DEEPCONTEXT_CUDA_DRIVER", DEEPCONTEXT_FAKE_CUDA_DRIVER, 1);
  void* driver_library = dlopen(DEEPCONTEXT_FAKE_CUDA_DRIVER, RTLD_NOW);
  if (driver_library == nullptr) {
    std::fprintf(stderr, "fake_launch_cost: %s\n", dlerror());
    return 1;
  }
  Driver<void (*)(int, int)>(driver_library, "fake_cuda_set_primary_active")(0, 1);
  const CUcontext primary =
      Driver<CUcontext (*)(int)>(driver_library, "fake_cuda_primary_context")(0);
  Driver<void (*)(CUcontext)>(driver_library, "fake_cuda_set_current_context")(primary);
  dlmonitor_init();

  fake::ResetFakeCupti();
  deepcontext::gpu::FakeContextSink sink;
  const auto library =
      cupti::CuptiLibrary::FromFunctions(fake::FakeCuptiFunctions(), 130001, "fake-cupti");
  deepcontext::StatusOr<std::unique_ptr<cupti::CudaDriver>> driver = cupti::CudaDriver::Load();
  if (!driver.ok()) {
    std::fprintf(stderr, "fake_launch_cost: %s\n", driver.status().message().c_str());
    return 1;
  }
  cupti::GpuBackendState state(sink, *library, std::move(*driver));
  if (const deepcontext::Status started = state.Start(); !started.ok()) {
    std::fprintf(stderr, "fake_launch_cost: %s\n", started.message().c_str());
    return 1;
  }

  uint32_t correlation = 0;
  auto records = [](uint32_t first, uint32_t last) {
    for (uint32_t k = first; k <= last; ++k) fake::FakeCuptiKernelRecord(k, k, k + 1);
  };
  auto run = [&](bool traced, bool in_op, bool cold) {
    SetLaunchTraced(traced, nullptr);
    const deepcontext::bench::ColdCaches caches(cold);
    const uint32_t first = correlation + 1;
    auto launch = [&](int) {
      const uint32_t id = ++correlation;
      if (in_op) deepcontext::testing::EmitOp("aten::add", id, DLMONITOR_PHASE_ENTER);
      fake::FakeCuptiLaunch(id, kKernelName);
      if (in_op) deepcontext::testing::EmitOp("aten::add", id, DLMONITOR_PHASE_EXIT);
    };
    const double ns = caches.TimeNs(launches, launch);
    if (traced) {
      records(first, correlation);
      state.Flush();
    }
    SetLaunchTraced(true, nullptr);
    return ns / launches;
  };
  struct Config {
    const char* name;
    bool traced;
    bool in_op;
    bool cold;
    std::vector<double> ns;
  };
  std::vector<Config> configs;
  for (const Config& config : std::vector<Config>{
           {"untraced", false, false, false, {}},
           {"traced", true, false, false, {}},
           {"op, untraced", false, true, false, {}},
           {"traced, in an op", true, true, false, {}},
           {"op, untraced, cold caches", false, true, true, {}},
           {"traced, in an op, cold caches", true, true, true, {}}}) {
    // Untraced rows are the baselines of the traced ones.
    if (!config.traced || std::string(config.name).find(only) != std::string::npos) {
      configs.push_back(config);
    }
  }
  for (int round = 0; round < rounds; ++round) {
    for (Config& config : configs) {
      config.ns.push_back(run(config.traced, config.in_op, config.cold));
    }
  }
  state.Stop();
  std::printf("| configuration | ns per launch (median of %d x %d) | added |\n", rounds,
              launches);
  std::printf("|---|---|---|\n");
  // "added" is against the untraced row with the same op and caches.
  auto baseline = [&](const Config& traced) {
    for (const Config& config : configs) {
      if (!config.traced && config.in_op == traced.in_op && config.cold == traced.cold) {
        return Median(config.ns);
      }
    }
    return 0.0;
  };
  for (const Config& config : configs) {
    const double ns = Median(config.ns);
    std::printf("| %s | %.1f | %+.1f |\n", config.name, ns, ns - baseline(config));
  }
  return 0;
}
