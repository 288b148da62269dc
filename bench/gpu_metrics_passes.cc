// Replay passes of --gpu-metrics' counter set, from CUPTI's profiler host
// API alone: no GPU and no driver needed, only libcupti and its
// libnvperf_host beside it. A measured launch is replayed once per pass, so
// the pass count is what a metric costs.
//
//     build/bin/gpu_metrics_passes [chip (GH100)] [libcupti path] [metric ...]
//
// Prints the passes of the default set (runtime/cupti/gpu_metrics_session.cc),
// of each of its metrics alone, of the set without each one, and of the set
// plus each extra metric named on the command line. A metric the chip lacks
// is said so and left out, as the runtime does.
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/cupti/gpu_metrics_functions.h"
#include "runtime/cupti/gpu_metrics_session.h"

namespace {

struct HostApi {
  decltype(&cuptiProfilerHostInitialize) initialize = nullptr;
  decltype(&cuptiProfilerHostDeinitialize) deinitialize = nullptr;
  decltype(&cuptiProfilerHostConfigAddMetrics) add_metrics = nullptr;
  decltype(&cuptiProfilerHostGetConfigImageSize) image_size = nullptr;
  decltype(&cuptiProfilerHostGetConfigImage) image = nullptr;
  decltype(&cuptiProfilerHostGetNumOfPasses) passes = nullptr;
};

bool Resolve(void* library, HostApi& api) {
  auto get = [library](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(library, name));
    return slot != nullptr;
  };
  return get(api.initialize, "cuptiProfilerHostInitialize") &&
         get(api.deinitialize, "cuptiProfilerHostDeinitialize") &&
         get(api.add_metrics, "cuptiProfilerHostConfigAddMetrics") &&
         get(api.image_size, "cuptiProfilerHostGetConfigImageSize") &&
         get(api.image, "cuptiProfilerHostGetConfigImage") &&
         get(api.passes, "cuptiProfilerHostGetNumOfPasses");
}

// A host object for `chip` with the `metrics` it takes, or null; names it
// refuses go to *refused. A host object that refused one metric refuses
// all later ones (CUPTI 13.0), so after a refusal the next metric goes to
// a new object with those taken so far, as the runtime does.
CUpti_Profiler_Host_Object* HostWith(const HostApi& api, const std::string& chip,
                                     const std::vector<std::string>& metrics,
                                     std::vector<std::string>* refused) {
  auto init = [&]() -> CUpti_Profiler_Host_Object* {
    CUpti_Profiler_Host_Initialize_Params params{
        CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    params.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    params.pChipName = chip.c_str();
    return api.initialize(&params) == CUPTI_SUCCESS ? params.pHostObject : nullptr;
  };
  auto add = [&](CUpti_Profiler_Host_Object* host, const std::string& metric) {
    CUpti_Profiler_Host_ConfigAddMetrics_Params params{
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    params.pHostObject = host;
    const char* name = metric.c_str();
    params.ppMetricNames = &name;
    params.numMetrics = 1;
    return api.add_metrics(&params) == CUPTI_SUCCESS;
  };
  auto release = [&](CUpti_Profiler_Host_Object* host) {
    CUpti_Profiler_Host_Deinitialize_Params params{
        CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    params.pHostObject = host;
    api.deinitialize(&params);
  };
  CUpti_Profiler_Host_Object* host = init();
  std::vector<std::string> taken;
  bool poisoned = false;
  for (const std::string& metric : metrics) {
    if (host == nullptr) return nullptr;
    if (poisoned) {
      release(host);
      host = init();
      for (const std::string& name : taken) {
        if (host == nullptr || !add(host, name)) return nullptr;
      }
      poisoned = false;
    }
    if (add(host, metric)) {
      taken.push_back(metric);
    } else {
      refused->push_back(metric);
      poisoned = true;
    }
  }
  if (host != nullptr && taken.empty()) {
    release(host);
    return nullptr;
  }
  return host;
}

// Passes of `metrics` on `chip`, or -1.
int Passes(const HostApi& api, const std::string& chip, const std::vector<std::string>& metrics,
           std::vector<std::string>* refused) {
  CUpti_Profiler_Host_Object* host = HostWith(api, chip, metrics, refused);
  if (host == nullptr) return -1;
  int result = -1;
  CUpti_Profiler_Host_GetConfigImageSize_Params size{
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = host;
  if (api.image_size(&size) == CUPTI_SUCCESS) {
    std::vector<uint8_t> image(size.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params get{
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    get.pHostObject = host;
    get.configImageSize = image.size();
    get.pConfigImage = image.data();
    CUpti_Profiler_Host_GetNumOfPasses_Params passes{
        CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    passes.configImageSize = image.size();
    passes.pConfigImage = image.data();
    if (api.image(&get) == CUPTI_SUCCESS && api.passes(&passes) == CUPTI_SUCCESS) {
      result = static_cast<int>(passes.numOfPasses);
    }
  }
  CUpti_Profiler_Host_Deinitialize_Params done{
      CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  done.pHostObject = host;
  api.deinitialize(&done);
  return result;
}

void Print(const HostApi& api, const std::string& chip, const std::string& label,
           const std::vector<std::string>& metrics) {
  std::vector<std::string> refused;
  const int passes = Passes(api, chip, metrics, &refused);
  std::printf("%3d passes  %s", passes, label.c_str());
  for (const std::string& metric : refused) std::printf("  (%s: not on %s)", metric.c_str(), chip.c_str());
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string chip = argc > 1 ? argv[1] : "GH100";
  const std::string path = argc > 2 ? argv[2] : "libcupti.so.13";
  // CUPTI finds libnvperf_host by name: the copy beside it first.
  if (const size_t slash = path.rfind('/'); slash != std::string::npos) {
    dlopen((path.substr(0, slash + 1) + "libnvperf_host.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
  }
  void* library = dlopen(path.c_str(), RTLD_NOW);
  HostApi api;
  if (library == nullptr || !Resolve(library, api)) {
    std::fprintf(stderr, "%s: no CUPTI profiler host API (%s)\n", path.c_str(),
                 library == nullptr ? dlerror() : "missing symbols");
    return 1;
  }
  std::vector<std::string> defaults;
  for (const auto& metric : deepcontext::cupti::DefaultCounterMetrics()) {
    defaults.emplace_back(metric.cupti_name);
  }
  std::printf("chip %s, %s\n", chip.c_str(), path.c_str());
  Print(api, chip, "default set", defaults);
  for (const std::string& metric : defaults) Print(api, chip, metric + " alone", {metric});
  for (size_t i = 0; i < defaults.size(); ++i) {
    std::vector<std::string> without = defaults;
    without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
    Print(api, chip, "default set without " + defaults[i], without);
  }
  for (int i = 3; i < argc; ++i) {
    Print(api, chip, std::string(argv[i]) + " alone", {argv[i]});
    std::vector<std::string> with = defaults;
    with.emplace_back(argv[i]);
    Print(api, chip, "default set with " + std::string(argv[i]), with);
  }
  return 0;
}
