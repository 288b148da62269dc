#include "runtime/cupti/driver_api.h"

namespace deepcontext::cupti {

DriverApiClass ClassifyDriverApi(std::string_view name) {
  auto starts = [name](std::string_view prefix) {
    return name.substr(0, prefix.size()) == prefix;
  };
  if (starts("cuGraphLaunch")) return DriverApiClass::kGraphLaunch;
  if (starts("cuGraphAdd")) return DriverApiClass::kGraphBuild;
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

uint32_t ExpectedRecords(DriverApiClass api, std::string_view name) {
  switch (api) {
    case DriverApiClass::kGraphLaunch:
      return 0;
    case DriverApiClass::kKernelLaunch:
      // One kernel per participating device.
      return name.find("MultiDevice") != std::string_view::npos ? 0 : 1;
    case DriverApiClass::kCopy:
      // One record per copy of the batch.
      return name.find("Batch") != std::string_view::npos ? 0 : 1;
    case DriverApiClass::kMemset:
    case DriverApiClass::kSync:
      return 1;
    case DriverApiClass::kOther:
    case DriverApiClass::kGraphBuild:
      return 0;
  }
  return 0;
}

}  // namespace deepcontext::cupti
