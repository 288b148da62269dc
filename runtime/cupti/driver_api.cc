#include "runtime/cupti/driver_api.h"

namespace deepcontext::cupti {

DriverApiClass ClassifyDriverApi(std::string_view name) {
  if (name.starts_with("cuGraphLaunch")) return DriverApiClass::kGraphLaunch;
  if (name.starts_with("cuGraphAdd")) return DriverApiClass::kGraphBuild;
  if (name.starts_with("cuGraphNodeSetEnabled")) return DriverApiClass::kGraphExecEdit;
  // Host functions run on the CPU and produce no GPU activity record.
  if (name.starts_with("cuLaunchHostFunc")) return DriverApiClass::kOther;
  if (name.starts_with("cuLaunch")) return DriverApiClass::kKernelLaunch;
  if (name.starts_with("cuMemcpy")) return DriverApiClass::kCopy;
  if (name.starts_with("cuMemset")) return DriverApiClass::kMemset;
  if (SyncKindOfApi(name) != gpu::SyncKind::kUnknown) return DriverApiClass::kSync;
  return DriverApiClass::kOther;
}

gpu::SyncKind SyncKindOfApi(std::string_view name) {
  if (name.starts_with("cuCtxSynchronize")) return gpu::SyncKind::kContext;
  if (name.starts_with("cuStreamSynchronize")) return gpu::SyncKind::kStream;
  if (name.starts_with("cuEventSynchronize")) return gpu::SyncKind::kEvent;
  if (name.starts_with("cuStreamWaitEvent")) return gpu::SyncKind::kStreamWaitEvent;
  return gpu::SyncKind::kUnknown;
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
