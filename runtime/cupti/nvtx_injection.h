// The runtime library as the process's NVTX tool (NVTX_INJECTION64_PATH
// names it; defined in nvtx_callbacks.cc): XLA's ranges go straight to the
// running backend's XlaRanges, without CUPTI in between.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include "runtime/xla/xla_ranges.h"

namespace deepcontext::cupti {

// Fills NVTX's function table (what InitializeInjectionNvtx2 does); 1 on
// success, as NVTX expects.
int InstallNvtxTool(NvtxGetExportTableFunc_t get_export_table);
// Whether NVTX installed the tool in this process.
bool NvtxToolInjected();
// Where ranges go from now on; nullptr (a backend stopping) also waits until
// no NVTX call still uses the previous one.
void SetNvtxToolTarget(xla::XlaRanges* ranges);
// SetNvtxToolTarget(nullptr) when `ranges` is the target.
void ReleaseNvtxToolTarget(const xla::XlaRanges* ranges);

}  // namespace deepcontext::cupti
