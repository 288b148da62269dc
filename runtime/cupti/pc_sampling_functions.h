// The typed table of CUPTI's PC sampling entry points (cupti_pcsampling.h),
// resolved from the libcupti already loaded (cupti_loader.h) or handed in
// by tests. Includes the vendor header: include it from .cc files only.
#pragma once

#include <cupti_pcsampling.h>

#include <string>

#include "common/status.h"

namespace deepcontext::cupti {

struct PcSamplingFunctions {
  decltype(&::cuptiPCSamplingGetNumStallReasons) get_num_stall_reasons = nullptr;
  decltype(&::cuptiPCSamplingGetStallReasons) get_stall_reasons = nullptr;
  decltype(&::cuptiPCSamplingSetConfigurationAttribute) set_configuration = nullptr;
  decltype(&::cuptiPCSamplingEnable) enable = nullptr;
  decltype(&::cuptiPCSamplingDisable) disable = nullptr;
  decltype(&::cuptiPCSamplingGetData) get_data = nullptr;
  // Optional (source lines of sampled instructions); nullptr when absent.
  decltype(&::cuptiGetCubinCrc) get_cubin_crc = nullptr;
  decltype(&::cuptiGetSassToSourceCorrelation) get_sass_to_source = nullptr;
};

// Resolves the table from the libcupti at `library_path`, which must be
// loaded already. The error names the first entry point missing
// ("libcupti has no cuptiPCSamplingEnable"), for the profile's status of
// the samples.
Status ResolvePcSamplingFunctions(const std::string& library_path,
                                  PcSamplingFunctions* functions);

}  // namespace deepcontext::cupti
