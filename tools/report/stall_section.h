// The "GPU stall reasons" section of the report: for the kernels sampled
// with `deepcontext run --gpu-samples`, where their warps spent the samples
// (tools/analysis/stall_reasons.h) and what the dominant reasons mean.
#pragma once

#include <string>

#include "tools/report/section_context.h"

namespace deepcontext::report {

// "" when the profile has no instruction samples or top is 0.
std::string RenderStallReasons(const SectionContext& context);

}  // namespace deepcontext::report
