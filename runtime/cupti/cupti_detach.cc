#include "runtime/cupti/cupti_detach.h"

#include <cstring>

#include "runtime/cupti/cupti_loader.h"

namespace deepcontext::cupti {

std::string DetachRefusal(const DetachInput& input) {
  if (input.setting != nullptr && std::strcmp(input.setting, "0") == 0) {
    return "turned off (DEEPCONTEXT_CUPTI_DETACH=0)";
  }
  if (!input.subscribed) return "another CUPTI client holds the subscription";
  if (input.launches_without_records > 0) {
    return "another CUPTI client took the activity records";
  }
  if (!input.gpu_idle) {
    return "the GPU work could not be waited for when profiling stopped";
  }
  // Versions from CUDA 13 on (major * 10000 + ...) are all newer.
  if (CuptiApiMajor(input.cupti_api_version) < 13 &&
      input.cupti_api_version < kFirstSafeDetachVersion) {
    return "CUPTI API version " + std::to_string(input.cupti_api_version) +
           " predates CUDA 12.6, where detaching became safe";
  }
  return "";
}

std::string DetachDescription(const DetachInput& input) {
  const std::string refusal = DetachRefusal(input);
  if (refusal.empty()) {
    return "at stop (cuptiFinalize): launches after profiling cost what they "
           "did before";
  }
  return "no: " + refusal + "; launches after profiling keep CUPTI's cost";
}

}  // namespace deepcontext::cupti
