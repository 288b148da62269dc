// CPU cost of one kernel launch under the pieces of CUPTI tracing, on a GPU
// machine: which part of DeepContext's per-launch overhead is CUPTI's driver
// callback API, which is kernel activity tracing, and which is DeepContext's
// own work in the callback.
//
//     build/bin/gpu_launch_cost [launches per round (20000)] [rounds (7)]
//                               [configurations]
//
// `configurations` ('|'-separated names from the list below) times only
// those, with "none" as the baseline, and leaves out the stall table: a
// profile of one configuration (perf record) then shows its work alone.
//
// Launches an empty kernel (loaded from PTX) from one thread, in rounds that
// interleave the configurations below, and prints the median microseconds per
// launch of each and its difference to no tracing:
//   none         no CUPTI
//   callbacks    a subscriber with an empty callback on the launch functions
//   activity     CONCURRENT_KERNEL activity records, no callbacks
//   both         callbacks + activity, what DeepContext asks CUPTI for
//   deepcontext's setup
//                CUPTI configured as DeepContext configures it (its
//                activity kinds, callbacks on the launch, copy, memset,
//                synchronization and graph functions, resource callbacks),
//                with an empty callback: the rest of "deepcontext" is its
//                own callback work
//   both + ...   callbacks + kernel activity plus one more piece of that
//                setup, to find the piece that slows the untraced calls,
//                or plus an activity setting the runtime leaves at
//                CUPTI's default (pinned host memory for the profiling
//                data, one activity buffer shared by all threads)
//   deepcontext  the DeepContext runtime (deepcontext_start) doing its work
//   both, activity paused
//                callbacks + activity set up, then kernel activity disabled
//                while the launches are timed (and enabled again after):
//                what launches cost between traced windows; the time of
//                one disable + enable is printed below the table
//   after unsubscribe only
//                no tracing, right after callbacks + activity were turned
//                off and unsubscribed without detaching CUPTI
//                (cuptiFinalize): the cost a stopped profiler leaves behind
//                unless it detaches, as DeepContext does when it stops
//   deepcontext, started before cuInit
//                only when named: the runtime started before the driver
//                is initialized, as `deepcontext run` starts it, where
//                "deepcontext" starts it in a process whose CUDA context
//                exists. Its rounds run first, before any other
//                configuration, and "none, before any CUPTI use" is then
//                timed after it stopped.
// Then the runtime's launch stalls: 300000 launches timed one by one, with
// the activity buffers cleared by the runtime or by CUPTI (PrintStalls).
// Every other configuration detaches CUPTI when it ends, so "none" is the
// cost of a launch after profiling; the launches timed before any CUPTI use
// are printed too, for comparison. After each round's launches the same
// number of calls to cuCtxGetDevice, which nobody traces, are timed: what
// CUPTI adds to the cheap driver calls frameworks make around every launch.
#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/cupti_setup.h"
#include "bench/median.h"
#include "deepcontext/profiler.h"
#include "runtime/cupti/cupti_functions.h"
#include "runtime/cupti/cupti_loader.h"

namespace {

using deepcontext::bench::ActivityAttribute;
using deepcontext::bench::CuptiPieces;
using deepcontext::bench::CuptiSetup;
using deepcontext::bench::DeepContextPieces;
using deepcontext::bench::LaunchPieces;
using deepcontext::bench::Median;

constexpr char kEmptyKernelPtx[] =
    ".version 7.0\n.target sm_50\n.address_size 64\n"
    ".visible .entry empty()\n{\n  ret;\n}\n";

struct Driver {
  decltype(&cuInit) init;
  decltype(&cuDeviceGet) device_get;
  decltype(&cuDevicePrimaryCtxRetain) primary_ctx_retain;
  decltype(&cuCtxSetCurrent) ctx_set_current;
  decltype(&cuModuleLoadData) module_load_data;
  decltype(&cuModuleGetFunction) module_get_function;
  decltype(&cuLaunchKernel) launch_kernel;
  decltype(&cuCtxSynchronize) ctx_synchronize;
  decltype(&cuCtxGetDevice) ctx_get_device;
};

bool LoadDriver(Driver* driver) {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) return false;
  auto get = [handle](const char* name) { return dlsym(handle, name); };
  driver->init = reinterpret_cast<decltype(&cuInit)>(get("cuInit"));
  driver->device_get = reinterpret_cast<decltype(&cuDeviceGet)>(get("cuDeviceGet"));
  driver->primary_ctx_retain = reinterpret_cast<decltype(&cuDevicePrimaryCtxRetain)>(
      get("cuDevicePrimaryCtxRetain"));
  driver->ctx_set_current =
      reinterpret_cast<decltype(&cuCtxSetCurrent)>(get("cuCtxSetCurrent"));
  driver->module_load_data =
      reinterpret_cast<decltype(&cuModuleLoadData)>(get("cuModuleLoadData"));
  driver->module_get_function =
      reinterpret_cast<decltype(&cuModuleGetFunction)>(get("cuModuleGetFunction"));
  driver->launch_kernel = reinterpret_cast<decltype(&cuLaunchKernel)>(get("cuLaunchKernel"));
  driver->ctx_synchronize =
      reinterpret_cast<decltype(&cuCtxSynchronize)>(get("cuCtxSynchronize"));
  driver->ctx_get_device =
      reinterpret_cast<decltype(&cuCtxGetDevice)>(get("cuCtxGetDevice"));
  return driver->init && driver->device_get && driver->primary_ctx_retain &&
         driver->ctx_set_current && driver->module_load_data &&
         driver->module_get_function && driver->launch_kernel &&
         driver->ctx_synchronize && driver->ctx_get_device;
}

// Launch stalls under the runtime: each of many launches timed alone, with
// the runtime handing CUPTI cleared activity buffers (as it does) and with
// CUPTI clearing each one itself on the launching thread
// (DEEPCONTEXT_CUPTI_CLEARED_BUFFERS=0). A buffer holds tens of thousands of
// kernel records, so a stall is rare and invisible in a median per launch.
bool PrintStalls(const Driver& cu, CUfunction kernel, int rounds) {
  constexpr int kLaunches = 300000;
  constexpr double kStallUs = 100;
  struct Stalls {
    std::vector<double> longest_us, stalls, stalled_us, mean_us;
  };
  std::map<std::string, Stalls> by_variant;
  std::vector<double> times(kLaunches);
  for (int round = 0; round < rounds; ++round) {
    for (const char* clearing : {"1", "0"}) {
      setenv("DEEPCONTEXT_CUPTI_CLEARED_BUFFERS", clearing, 1);
      if (deepcontext_start() != 0) {
        std::fprintf(stderr, "gpu_launch_cost: deepcontext failed%s\n",
                     deepcontext_last_error());
        return false;
      }
      const auto first = std::chrono::steady_clock::now();
      auto before = first;
      for (int i = 0; i < kLaunches; ++i) {
        if (cu.launch_kernel(kernel, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr) !=
            CUDA_SUCCESS) {
          return false;
        }
        const auto after = std::chrono::steady_clock::now();
        times[i] = std::chrono::duration<double, std::micro>(after - before).count();
        before = after;
      }
      const double total_us =
          std::chrono::duration<double, std::micro>(before - first).count();
      const bool synchronized = cu.ctx_synchronize() == CUDA_SUCCESS;
      deepcontext_stop();
      if (!synchronized) return false;
      Stalls& stalls = by_variant[clearing];
      double longest = 0, stalled = 0;
      int count = 0;
      for (double us : times) {
        longest = std::max(longest, us);
        if (us > kStallUs) {
          ++count;
          stalled += us;
        }
      }
      stalls.longest_us.push_back(longest);
      stalls.stalls.push_back(count);
      stalls.stalled_us.push_back(stalled);
      stalls.mean_us.push_back(total_us / kLaunches);
    }
  }
  unsetenv("DEEPCONTEXT_CUPTI_CLEARED_BUFFERS");
  std::printf("\n| deepcontext, %d launches timed one by one (median of %d) | longest "
              "launch (us) | launches over %.0f us | their time (us) | us per launch |\n",
              kLaunches, rounds, kStallUs);
  std::printf("|---|---|---|---|---|\n");
  for (const auto& [clearing, stalls] : by_variant) {
    std::printf("| %s | %.0f | %.0f | %.0f | %.3f |\n",
                clearing[0] == '1' ? "buffers cleared by the runtime's record thread"
                                   : "buffers cleared by CUPTI on the launching thread",
                Median(stalls.longest_us), Median(stalls.stalls), Median(stalls.stalled_us),
                Median(stalls.mean_us));
  }
  return true;
}

std::set<std::string> SplitNames(const std::string& text) {
  std::set<std::string> names;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('|', start), text.size());
    if (end > start) names.insert(text.substr(start, end - start));
    start = end + 1;
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  if (launches <= 0 || rounds <= 0 || argc > 4) {
    std::fprintf(stderr, "usage: %s [launches per round] [rounds] [configurations]\n",
                 argv[0]);
    return 2;
  }
  const bool named = argc > 3;
  std::set<std::string> only = named ? SplitNames(argv[3]) : std::set<std::string>{};
  constexpr char kStartedFirst[] = "deepcontext, started before cuInit";
  const bool started_first = only.erase(kStartedFirst) != 0;
  Driver cu{};
  if (!LoadDriver(&cu)) {
    std::fprintf(stderr, "gpu_launch_cost: no CUDA driver (libcuda.so.1)\n");
    return 1;
  }
  if (started_first && deepcontext_start() != 0) {
    std::fprintf(stderr, "gpu_launch_cost: deepcontext failed%s\n", deepcontext_last_error());
    return 1;
  }
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUfunction kernel = nullptr;
  if (cu.init(0) != CUDA_SUCCESS || cu.device_get(&device, 0) != CUDA_SUCCESS ||
      cu.primary_ctx_retain(&context, device) != CUDA_SUCCESS ||
      cu.ctx_set_current(context) != CUDA_SUCCESS ||
      cu.module_load_data(&module, kEmptyKernelPtx) != CUDA_SUCCESS ||
      cu.module_get_function(&kernel, module, "empty") != CUDA_SUCCESS) {
    std::fprintf(stderr, "gpu_launch_cost: cannot set up a CUDA context and kernel\n");
    return 1;
  }
  const deepcontext::cupti::CuptiLibrary& cupti =
      deepcontext::cupti::CuptiLibrary::Get();
  if (!cupti.available()) {
    std::fprintf(stderr, "gpu_launch_cost: CUPTI %s\n", cupti.status().message().c_str());
    return 1;
  }
  const auto& f = *cupti.functions();

  // Frameworks call cheap driver functions that nobody traces many times
  // per launch (the current device, stream capture state, ...): what a
  // configuration adds to those is timed after each round's launches.
  double untraced_us = 0;
  auto time_untraced = [&]() {
    CUdevice current = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) {
      if (cu.ctx_get_device(&current) != CUDA_SUCCESS) return -1.0;
    }
    const std::chrono::duration<double, std::micro> elapsed =
        std::chrono::steady_clock::now() - start;
    return elapsed.count() / launches;
  };
  // Microseconds per launch of one round, or a negative value on failure.
  auto time_launches = [&]() {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) {
      if (cu.launch_kernel(kernel, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr,
                           nullptr) != CUDA_SUCCESS) {
        return -1.0;
      }
    }
    if (cu.ctx_synchronize() != CUDA_SUCCESS) return -1.0;
    const std::chrono::duration<double, std::micro> elapsed =
        std::chrono::steady_clock::now() - start;
    untraced_us = time_untraced();
    return untraced_us < 0 ? -1.0 : elapsed.count() / launches;
  };
  std::vector<double> toggle_us;  // one kernel-activity disable + enable
  auto with_cupti = [&](bool callbacks, bool activity) {
    return [&, callbacks, activity]() {
      CuptiSetup setup(f, callbacks, activity);
      return setup.ok() ? time_launches() : -1.0;
    };
  };
  auto with_pieces = [&](CuptiPieces pieces) {
    return [&, pieces]() {
      CuptiSetup setup(f, pieces);
      return setup.ok() ? time_launches() : -1.0;
    };
  };
  // Callbacks + kernel activity with one activity setting changed.
  auto both_with = [&](const ActivityAttribute& setting) {
    CuptiPieces pieces = LaunchPieces(true, true);
    pieces.attributes.push_back(setting);
    return with_pieces(pieces);
  };
  const std::vector<std::pair<std::string, std::function<double()>>> configs = {
      {"none", time_launches},
      {"callbacks", with_cupti(true, false)},
      {"activity", with_cupti(false, true)},
      {"both", with_cupti(true, true)},
      {"deepcontext's setup",
       [&]() {
         CuptiSetup setup(f, DeepContextPieces());
         return setup.ok() ? time_launches() : -1.0;
       }},
      // Which piece of that setup slows the untraced calls down.
      {"both + the traced functions' callbacks",
       with_pieces([] {
         CuptiPieces pieces = LaunchPieces(true, true);
         pieces.traced_callbacks = true;
         return pieces;
       }())},
      {"both + resource callbacks",
       with_pieces([] {
         CuptiPieces pieces = LaunchPieces(true, true);
         pieces.resource_callbacks = true;
         return pieces;
       }())},
      {"both + copy and memset records",
       with_pieces([] {
         CuptiPieces pieces = LaunchPieces(true, true);
         pieces.kinds.insert(pieces.kinds.end(),
                             {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
                              CUPTI_ACTIVITY_KIND_MEMSET});
         return pieces;
       }())},
      {"both + synchronization records",
       with_pieces([] {
         CuptiPieces pieces = LaunchPieces(true, true);
         pieces.kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
         return pieces;
       }())},
      // Activity settings that might move CUPTI's own work off the launch.
      {"both + pinned host profiling memory",
       both_with({CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, 1, 0, 1})},
      {"both + one activity buffer for all threads",
       both_with({CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, 0, 1, 1})},
      {"deepcontext",
       [&]() {
         if (deepcontext_start() != 0) return -1.0;
         const double us = time_launches();
         deepcontext_stop();
         return us;
       }},
      {"both, activity paused",
       [&]() {
         CuptiSetup setup(f, true, true);
         if (!setup.ok() || time_launches() < 0) return -1.0;
         const auto paused = std::chrono::steady_clock::now();
         if (f.activity_disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
           return -1.0;
         }
         const auto disabled = std::chrono::steady_clock::now();
         const double us = time_launches();
         const auto resumed = std::chrono::steady_clock::now();
         if (f.activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
           return -1.0;
         }
         const std::chrono::duration<double, std::micro> toggle =
             (disabled - paused) + (std::chrono::steady_clock::now() - resumed);
         toggle_us.push_back(toggle.count());
         return us;
       }},
      {"after unsubscribe only",
       [&]() {
         bool ok = false;
         {
           CuptiSetup setup(f, true, true, /*detach=*/false);
           ok = setup.ok() && time_launches() > 0;
         }
         const double us = ok ? time_launches() : -1.0;
         f.finalize();
         return us;
       }},
  };

  for (const std::string& name : only) {
    const bool known = std::any_of(configs.begin(), configs.end(),
                                   [&](const auto& config) { return config.first == name; });
    if (!known) {
      std::fprintf(stderr, "gpu_launch_cost: no configuration '%s'; they are:\n",
                   name.c_str());
      for (const auto& config : configs) std::fprintf(stderr, "  %s\n", config.first.c_str());
      return 2;
    }
  }
  auto selected = [&](const std::string& name) {
    return !named || name == "none" || only.count(name) != 0;
  };

  time_launches();  // warm-up: JIT, first-launch costs
  std::vector<double> started_first_us;
  if (started_first) {
    for (int round = 0; round < rounds; ++round) {
      started_first_us.push_back(time_launches());
      if (started_first_us.back() < 0) {
        std::fprintf(stderr, "gpu_launch_cost: configuration '%s' failed\n", kStartedFirst);
        return 1;
      }
    }
    deepcontext_stop();
  }
  std::vector<double> before_cupti;
  for (int round = 0; round < rounds; ++round) before_cupti.push_back(time_launches());
  std::map<std::string, std::vector<double>> results;
  std::map<std::string, std::vector<double>> untraced;  // of each round's last timing
  for (int round = 0; round < rounds; ++round) {
    for (const auto& [name, run] : configs) {
      if (!selected(name)) continue;
      const double us = run();
      if (us < 0) {
        std::fprintf(stderr, "gpu_launch_cost: configuration '%s' failed%s\n",
                     name.c_str(),
                     name == "deepcontext" ? deepcontext_last_error() : "");
        return 1;
      }
      results[name].push_back(us);
      untraced[name].push_back(untraced_us);
    }
  }
  const double none = Median(results["none"]);
  const double none_untraced = Median(untraced["none"]);
  std::printf("| configuration | us per launch (median of %d x %d) | added "
              "| us per untraced call (cuCtxGetDevice) | added |\n",
              rounds, launches);
  std::printf("|---|---|---|---|---|\n");
  for (const auto& [name, run] : configs) {
    if (!selected(name)) continue;
    const double median = Median(results[name]);
    const double call = Median(untraced[name]);
    std::printf("| %s | %.2f | %+.2f | %.3f | %+.3f |\n", name.c_str(), median,
                median - none, call, call - none_untraced);
  }
  if (started_first) {
    const double median = Median(started_first_us);
    std::printf("| %s | %.2f | %+.2f | | |\n", kStartedFirst, median, median - none);
  }
  const double first = Median(before_cupti);
  std::printf("| none, before any CUPTI use | %.2f | %+.2f | | |\n", first, first - none);
  if (!toggle_us.empty()) {
    std::printf("kernel activity disable + enable: %.1f us (median of %zu)\n",
                Median(toggle_us), toggle_us.size());
  }
  if (selected("deepcontext")) std::printf("deepcontext: %s\n", deepcontext_gpu_status());
  if (named) return 0;
  return PrintStalls(cu, kernel, rounds) ? 0 : 1;
}
