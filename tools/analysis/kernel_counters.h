// Hardware counters of GPU kernels: the gpu_occupancy_achieved,
// gpu_sm_throughput_pct, gpu_dram_throughput_pct and gpu_tensor_pipe_pct
// samples that `deepcontext run --gpu-metrics` records on kernel nodes (one
// per measured launch), as means per kernel node, for the report's counter
// section and the analyzer's gpu_counters rule.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::analysis {

struct KernelCounters {
  NodeIndex kernel = 0;
  double gpu_time = 0;          // inclusive gpu_time of the kernel node, ns
  uint64_t launches = 0;        // launches measured
  // Launches with a GPU time (gpu_time samples), and those the tracer gave
  // none (gpu_untimed_launches): with --gpu-metrics the measured launches,
  // which CUPTI replays once per counter pass and does not time. gpu_time
  // is the sum over the timed launches only.
  uint64_t timed_launches = 0;
  uint64_t untimed_launches = 0;
  // Means over the measured launches; absent where not measured.
  std::optional<double> occupancy;        // achieved, 0..1
  std::optional<double> sm_pct;           // % of peak
  std::optional<double> dram_pct;         // % of peak
  std::optional<double> tensor_pipe_pct;  // % of cycles
};

// Whether the tree has hardware counters at all.
bool HasKernelCounters(const ProfileTree& tree);

// Every kernel node with counters, most GPU time first (most launches
// measured when the profile has no gpu_time).
std::vector<KernelCounters> MeasuredKernels(const ProfileTree& tree);

}  // namespace deepcontext::analysis
