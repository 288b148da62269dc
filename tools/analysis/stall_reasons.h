// Stall reasons of sampled GPU kernels: the gpu_stall_<reason> metrics that
// `deepcontext run --gpu-samples` records on instruction nodes
// (gpu_instruction, docs/FORMAT.md), summed per kernel node, for the
// report's stall section and the analyzer's gpu_stalls rule.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::analysis {

struct StallShare {
  std::string reason;   // "long_scoreboard" (the metric without gpu_stall_)
  std::string meaning;  // from the metric's description; may be empty
  double samples = 0;
  double share = 0;  // of the kernel's samples, 0..1
};

struct KernelStalls {
  NodeIndex kernel = 0;
  double samples = 0;   // gpu_samples under the kernel node
  double gpu_time = 0;  // inclusive gpu_time of the kernel node, ns
  std::vector<StallShare> reasons;  // most samples first
  NodeIndex hottest_instruction = 0;  // 0 when none
  double hottest_samples = 0;
};

// One sampled instruction node and its own stall reasons.
struct InstructionStalls {
  NodeIndex instruction = 0;
  NodeIndex kernel = 0;  // its kernel node
  double samples = 0;
  double kernel_share = 0;  // of its kernel's samples, 0..1
  std::vector<StallShare> reasons;  // most samples first; share of this instruction
};

// Whether the tree has instruction samples at all.
bool HasStallSamples(const ProfileTree& tree);

// Every kernel node with instruction samples, most GPU time first (most
// samples when the profile has no gpu_time). Reasons that are a sample
// of "selected" (issuing) count as samples but are work, not stalls: they
// are listed like the others so that shares add up to 1.
std::vector<KernelStalls> SampledKernels(const ProfileTree& tree);

// The `limit` instruction nodes with the most samples, over the kernels
// `keep_kernel` accepts (all when null).
std::vector<InstructionStalls> HottestInstructions(
    const ProfileTree& tree, size_t limit,
    const std::function<bool(NodeIndex kernel)>& keep_kernel = nullptr);

// Reasons whose samples mean the warp was working, not waiting.
bool IsIssueReason(const std::string& reason);

}  // namespace deepcontext::analysis
