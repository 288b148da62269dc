#include "runtime/cupti/driver_api.h"

namespace deepcontext::cupti {

DriverApiClass ClassifyDriverApi(std::string_view name) {
  auto starts = [name](std::string_view prefix) {
    return name.substr(0, prefix.size()) == prefix;
  };
  if (starts("cuGraphLaunch")) return DriverApiClass::kGraphLaunch;
  if (starts("cuGraphAdd")) return DriverApiClass::kGraphBuild;
  if (starts("cuGraphNodeSetEnabled")) return DriverApiClass::kGraphExecEdit;
  // Host functions run on the CPU and produce no GPU activity record.
  if (starts("cuLaunchHostFunc")) return DriverApiClass::kOther;
  if (starts("cuLaunch")) return DriverApiClass::kKernelLaunch;
  if (starts("cuMemcpy")) return DriverApiClass::kCopy;
  if (starts("cuMemset")) return DriverApiClass::kMemset;
  if (starts("cuCtxSynchronize") || starts("cuStreamSynchronize") ||
      starts("cuEventSynchronize") || starts("cuStreamWaitEvent")) {
    return DriverApiClass::kSync;
  }
  return DriverApiClass::kOther;
}

SyncKind SyncKindOfApi(std::string_view name) {
  auto starts = [name](std::string_view prefix) {
    return name.substr(0, prefix.size()) == prefix;
  };
  if (starts("cuCtxSynchronize")) return SyncKind::kContext;
  if (starts("cuStreamSynchronize")) return SyncKind::kStream;
  if (starts("cuEventSynchronize")) return SyncKind::kEvent;
  if (starts("cuStreamWaitEvent")) return SyncKind::kStreamWaitEvent;
  return SyncKind::kUnknown;
}

uint32_t ExpectedRecords(DriverApiClass api, std::string_view name,
                         const TracedActivity& traced) {
  switch (api) {
    case DriverApiClass::kGraphLaunch:
      return 0;
    case DriverApiClass::kKernelLaunch:
      if (!traced.kernels) return 0;
      // One kernel per participating device.
      return name.find("MultiDevice") != std::string_view::npos ? 0 : 1;
    case DriverApiClass::kCopy:
      if (!traced.copies || !traced.peer_copies) return 0;
      // One record per copy of the batch.
      return name.find("Batch") != std::string_view::npos ? 0 : 1;
    case DriverApiClass::kMemset:
      return traced.memsets ? 1 : 0;
    case DriverApiClass::kSync:
      return traced.syncs ? 1 : 0;
    case DriverApiClass::kOther:
    case DriverApiClass::kGraphBuild:
    case DriverApiClass::kGraphExecEdit:
      return 0;
  }
  return 0;
}

}  // namespace deepcontext::cupti
