// The one-line text of a failed CUPTI call, for the messages of the
// fine-grained collections (instruction sampling, hardware counters):
// "cuptiPCSamplingEnable failed: CUPTI_ERROR_HARDWARE_BUSY (what it means)".
#pragma once

#include <cupti.h>

#include <functional>
#include <string>
#include <string_view>

namespace deepcontext::cupti {

// " (<what it means>)", or "" for results whose name says enough.
inline std::string_view CuptiResultHint(int result) {
  switch (result) {
    case CUPTI_ERROR_HARDWARE_BUSY:
      // One process at a time may sample or count on a GPU: a second
      // --gpu-samples or --gpu-metrics run, Nsight Compute or DCGM's
      // profiling metrics hold it.
      return " (another process or profiler is using this GPU's performance "
             "counters; run one fine-grained collection per GPU at a time)";
    default:
      return {};
  }
}

// "<call> failed: <result's name>", then its hint. `result_text` names
// result codes (CuptiLibrary::ResultString); without it, or when it knows
// no name, the code is given as a number.
inline std::string DescribeCuptiFailure(const char* call, int result,
                                        const std::function<std::string(int)>& result_text) {
  const std::string named = result_text ? result_text(result) : "";
  return std::string(call) + " failed: " +
         (named.empty() ? "CUPTI error " + std::to_string(result) : named) +
         std::string(CuptiResultHint(result));
}

}  // namespace deepcontext::cupti
