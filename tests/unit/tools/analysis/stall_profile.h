// A hand-built profile as `deepcontext run --gpu-samples` writes it: two
// Python lines launching a memory-bound and a compute-bound kernel, each
// with instruction nodes carrying gpu_samples and gpu_stall_<reason>.
#pragma once

#include "format/profile_data.h"

namespace deepcontext::analysis::testing {

// Over 1 s on one sm_90 GPU: copy_kernel (line 20, through Triton's
// launcher in dist-packages, 400 ms, long_scoreboard 70 %), fma_kernel (line 30, 300 ms, math_pipe_throttle 55 %), and
// tiny_kernel (line 40, 1 ms, 10 samples).
format::Profile MakeStallProfile();

}  // namespace deepcontext::analysis::testing
