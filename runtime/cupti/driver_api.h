// Which CUDA driver API functions the backend traces, decided from their
// names (as cuptiGetCallbackName reports them, with suffixes such as _v2,
// _ptsz, _ptds). Deciding by name keeps the set right across CUDA versions
// that add variants of the same call. No vendor headers.
#pragma once

#include <cstdint>
#include <string_view>

namespace deepcontext::cupti {

enum class DriverApiClass : uint8_t {
  kOther = 0,         // not traced
  kKernelLaunch = 1,  // cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel, ...
  kGraphLaunch = 2,   // cuGraphLaunch
  kCopy = 3,          // cuMemcpy*
  kMemset = 4,        // cuMemset*
  kSync = 5,          // cuCtx/Stream/EventSynchronize, cuStreamWaitEvent
  // Explicit graph construction (cuGraphAdd*Node): produces no records
  // itself, traced to name the API under which graph nodes are created.
  kGraphBuild = 6,
};

DriverApiClass ClassifyDriverApi(std::string_view name);

// True for the classes whose calls produce activity records and are
// therefore reported to attribution as launches.
inline bool ProducesRecords(DriverApiClass api) {
  return api != DriverApiClass::kOther && api != DriverApiClass::kGraphBuild;
}

// How many activity records one call of `name` produces: 1 for a kernel,
// copy, memset or synchronization; 0 (unknown) for graph launches, batched
// copies and multi-device launches.
uint32_t ExpectedRecords(DriverApiClass api, std::string_view name);

}  // namespace deepcontext::cupti
