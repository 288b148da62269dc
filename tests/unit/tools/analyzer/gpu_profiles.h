// Hand-built GPU profiles for the analyzer's rules: the tree the CUPTI
// backend writes (Python line -> operator -> cuLaunchKernel -> kernel), with
// knobs that put each rule on either side of its threshold.
#pragma once

#include <string>

#include "format/profile_data.h"

namespace deepcontext::analyzer::testing {

// What one profile contains; every time is in ns over a 1 s run on an
// sm_90 GPU with 132 SMs. Lines are in /home/user/train.py.
struct GpuProfileSpec {
  double gpu_busy_ns = 0.9e9;      // gpu0_busy_ns metadata
  double gpu_span_ns = 0;          // gpu0_first_start_ns..last_end_ns
  double loader_host_ns = 0.05e9;  // a CPU-only line (42) in the loop
  double sync_ns = 0;              // sync: stream under .item() (line 50)
  double sync_count = 100;
  double pageable_bytes = 0;  // memcpy HtoD (pageable) at line 30
  double pageable_count = 100;
  double pageable_ns = 0;
  std::string gemm_kernel =
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n";  // line 60
  double gemm_ns = 0.3e9;
  double tiny_kernels = 0;  // kernels of 3 us under line 70
  double tiny_host_ns = 0;
  double custom_kernel_ns = 0;  // my_kernel at line 80
  double custom_blocks = 1024;
  double custom_occupancy = 0.9;
  int custom_kernels = 1;  // my_kernel, my_kernel_1, ... each as above
};

format::Profile MakeGpuProfile(const GpuProfileSpec& spec);

}  // namespace deepcontext::analyzer::testing
