// What a CUPTI result means for the user where its name alone does not say
// it, for the messages of the fine-grained collections (instruction
// sampling, hardware counters), which name the result first.
#pragma once

#include <cupti.h>

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

}  // namespace deepcontext::cupti
