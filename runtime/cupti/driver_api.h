// Which CUDA driver API functions the backend traces, decided from their
// names (as cuptiGetCallbackName reports them, with suffixes such as _v2,
// _ptsz, _ptds). Deciding by name keeps the set right across CUDA versions
// that add variants of the same call. No vendor headers.
#pragma once

#include <cstdint>
#include <string_view>

#include "runtime/gpu/gpu_records.h"

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
  // cuGraphNodeSetEnabled: produces no records itself, traced because a
  // disabled node makes the executable graph's record count unknown.
  kGraphExecEdit = 7,
};

DriverApiClass ClassifyDriverApi(std::string_view name);

// What a synchronization function (DriverApiClass::kSync) waits for;
// kUnknown for every other function.
gpu::SyncKind SyncKindOfApi(std::string_view name);

// True for the classes whose calls produce activity records and are
// therefore reported to attribution as launches.
inline bool ProducesRecords(DriverApiClass api) {
  return api != DriverApiClass::kOther && api != DriverApiClass::kGraphBuild &&
         api != DriverApiClass::kGraphExecEdit;
}

// The activity kinds that are enabled. A call whose records belong to a
// kind that is not traced produces none, so expecting one would keep its
// launch waiting forever.
struct TracedActivity {
  bool kernels = true;
  bool copies = true;       // CUPTI_ACTIVITY_KIND_MEMCPY
  bool peer_copies = true;  // CUPTI_ACTIVITY_KIND_MEMCPY2
  bool memsets = true;
  bool syncs = true;
};

// How many activity records one call of `name` produces: 1 for a kernel,
// copy, memset or synchronization whose kind is traced; 0 (unknown) for
// graph launches (the backend counts their nodes), batched copies,
// multi-device launches, and copies while only one of the two copy kinds is
// traced (whether a copy is peer to peer is not known from its name alone).
uint32_t ExpectedRecords(DriverApiClass api, std::string_view name,
                         const TracedActivity& traced = {});

}  // namespace deepcontext::cupti
