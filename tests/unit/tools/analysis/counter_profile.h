// A hand-built profile as `deepcontext run --gpu-metrics` writes it: six
// Python lines launching kernels whose hardware counters tell different
// stories, five measured launches each, and one launched only once.
#pragma once

#include "format/profile_data.h"

namespace deepcontext::analysis::testing {

// Over 1 s on one sm_90 GPU: copy_kernel (line 20, through Triton's
// launcher, 300 ms, DRAM 88 %), gather_kernel (line 25, 250 ms, DRAM 18 %,
// SM 9 %: memory-bound at low bandwidth), a BF16 GEMM (line 30, 200 ms,
// tensor pipe 12 %), fma_kernel (line 35, 150 ms, SM 92 %), tiny_kernel
// (line 40, 1 ms, DRAM 5 %: too small to matter), each launched 100 times
// of which 5 measured and so untimed, and normal_kernel (line 45), launched
// once, measured, without any GPU time.
format::Profile MakeCounterProfile();

}  // namespace deepcontext::analysis::testing
