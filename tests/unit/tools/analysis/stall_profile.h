// A hand-built profile as `deepcontext run --gpu-samples` writes it: two
// Python lines launching a memory-bound and a compute-bound kernel, each
// with instruction nodes carrying gpu_samples and gpu_stall_<reason>.
#pragma once

#include <string>

#include "format/profile_data.h"

namespace deepcontext::analysis::testing {

// Over 1 s on one sm_90 GPU: copy_kernel (line 20, through Triton's
// launcher in dist-packages, 400 ms, long_scoreboard 70 %), fma_kernel (line 30, 300 ms, math_pipe_throttle 55 %), and
// tiny_kernel (line 40, 1 ms, 10 samples).
format::Profile MakeStallProfile();

// The name MakeSassProfile gives its cubin in gpu_samples_cubins.
inline constexpr const char* kSassCubinName = "00000000c0ffee01";

// scale_add of tests/unit/tools/sass/fixtures/scale_add.cubin sampled at
// real offsets: 0x00f0 (FFMA waiting for the load: long_scoreboard),
// 0x00d0 (LDG.E.128), 0x0130 (STG.E.128), 0x0070 (@P0 EXIT), and 0x0400,
// past the end of the kernel (no SASS). Its cubins are named kept in
// `cubin_dir` as <kSassCubinName>.cubin.
format::Profile MakeSassProfile(const std::string& cubin_dir);

}  // namespace deepcontext::analysis::testing
