// The "GPU hardware counters" section of the report: for the kernels
// measured with `deepcontext run --gpu-metrics`, achieved occupancy, SM,
// DRAM and tensor-pipe throughput (tools/analysis/kernel_counters.h) and
// what limits each kernel.
#pragma once

#include <string>

#include "tools/report/section_context.h"

namespace deepcontext::report {

// "" when the profile has no hardware counters or top is 0.
std::string RenderKernelCounters(const SectionContext& context);

}  // namespace deepcontext::report
