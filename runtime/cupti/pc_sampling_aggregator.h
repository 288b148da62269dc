// Online aggregation of GPU instruction samples (CUPTI PC sampling, see
// pc_sampling_session.h) onto the calling-context tree, without vendor
// headers:
//
//   launch context -> [GPU API] -> [kernel] -> [pc 0x01a0]
//                                               gpu_samples, gpu_stall_<reason>
//
// Samples carry the correlation id of the launch that ran them (kernel-
// serialized collection), so the launch's context is remembered here when
// the launch is made, apart from the correlation table, which forgets a
// launch once its activity record arrived (samples may come later). A
// graph launch's samples all carry its one correlation id; each is placed
// where its kernel's activity records land, on the context that captured
// the kernel's node, when the kernel name was captured at one site of that
// graph (graph_kernel_sites.h), and kept under the launch otherwise. Every
// sample batch is added to the sink at once: the store aggregates them per
// (context, kernel, instruction, stall reason), and the profile grows with
// the instructions sampled, not with the samples.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "runtime/cupti/graph_kernel_sites.h"
#include "runtime/gpu/context_sink.h"

namespace deepcontext::cupti {

// One stall reason's samples at one instruction.
struct StallSamples {
  uint32_t reason_index = 0;  // CUPTI's index (see SetStallReasons)
  uint32_t samples = 0;
};

// One parsed PC record: an instruction of a kernel and its samples.
struct PcRecord {
  uint32_t correlation_id = 0;
  std::string_view function_name;  // the kernel, mangled like activity records
  uint64_t cubin_crc = 0;
  uint64_t pc_offset = 0;
  std::span<const StallSamples> stalls;
};

struct PcSamplingStats {
  uint64_t samples = 0;               // attributed to an instruction node
  uint64_t unattributed_samples = 0;  // launch unknown (before start, evicted)
  uint64_t dropped_samples = 0;       // CUPTI: hardware buffer overflow
  uint64_t non_user_samples = 0;      // CUPTI: kernels without PC records
  uint64_t instructions = 0;          // distinct instruction nodes
  uint64_t hardware_buffer_full = 0;  // batches CUPTI flagged
  uint64_t instructions_with_line = 0;  // of `instructions`, with a source line
  // Of `samples`, those of graph launches: placed on their kernel's capture
  // site, and kept under the launch (kernel name unknown in that graph, or
  // captured at several sites; graph built before profiling or without
  // stream capture).
  uint64_t graph_samples_at_capture = 0;
  uint64_t graph_samples_at_launch = 0;
};

// Maps (cubin CRC, function, pc offset) to a source file and line; false
// when unknown (pc_sampling_source_map.h).
using SourceResolver = std::function<bool(uint64_t cubin_crc, std::string_view function,
                                          uint64_t pc_offset, std::string* file,
                                          uint32_t* line)>;

// The metric name of a CUPTI stall reason, or "" for those left out:
// "smsp__pcsamp_warps_issue_stalled_long_scoreboard" -> "gpu_stall_long_scoreboard";
// the "..._not_issued" variants count a subset of the same samples and
// are left out so that the reasons of an instruction add up to its samples.
std::string StallMetricName(std::string_view cupti_name);

// What a stall reason usually means, for the metric description and the
// analyzer ("" when unknown).
std::string_view StallReasonMeaning(std::string_view metric_name);

class PcSampleAggregator {
 public:
  // Launches remembered for their samples; older ones are forgotten first
  // (correlation ids grow over time).
  static constexpr size_t kMaxLaunches = 1 << 16;

  explicit PcSampleAggregator(gpu::ContextSink& sink);

  // CUPTI's stall reasons of a device (index, name); registers their
  // metrics. Called once per context enabled. [any thread]
  void SetStallReasons(std::span<const std::pair<uint32_t, std::string>> reasons);
  // Gives instruction nodes created from now on a source file and line.
  void SetSourceResolver(SourceResolver resolver);
  // A kernel launch at API entry. [application threads]
  void OnLaunch(uint32_t correlation_id, gpu::ContextId context,
                std::string_view api_name);
  // A graph launch at API entry; `kernels`: where the executable graph's
  // kernels were captured, null when unknown. [application threads]
  void OnGraphLaunch(uint32_t correlation_id, gpu::ContextId context,
                     std::string_view api_name,
                     std::shared_ptr<const GraphKernelTable> kernels);
  // One instruction's samples. [the thread draining CUPTI's buffer]
  void OnPc(const PcRecord& record);
  // Batch totals CUPTI reports beside the records.
  void OnBatch(uint64_t dropped, uint64_t non_user, bool hardware_buffer_full);

  PcSamplingStats Stats() const;
  // The CRCs of the cubins that sampled instructions came from.
  std::set<uint64_t> SampledCubins() const;

 private:
  struct Launch {
    gpu::ContextId context = 0;
    std::string api;
    bool graph = false;
    std::shared_ptr<const GraphKernelTable> kernels;  // of a graph launch
  };
  void Remember(uint32_t correlation_id, Launch launch);
  gpu::ContextId InstructionNode(gpu::ContextId context, std::string_view api,
                                 const PcRecord& record);

  gpu::ContextSink& sink_;
  mutable std::mutex mutex_;
  std::unordered_map<uint32_t, Launch> launches_;
  std::deque<uint32_t> launch_order_;
  // Reason index -> metric id in the sink (-1 when the sink keeps no
  // named metrics); absent: a reason left out (_not_issued).
  std::unordered_map<uint32_t, int> reason_metrics_;
  int samples_metric_ = -1;
  // (launch context, api, kernel, cubin, pc) -> instruction node
  std::map<std::tuple<gpu::ContextId, std::string, std::string, uint64_t, uint64_t>,
           gpu::ContextId>
      instructions_;
  PcSamplingStats stats_;
  SourceResolver resolver_;
};

// Metadata pairs describing instruction sampling ("gpu_samples", ...).
std::vector<std::pair<std::string, std::string>> PcSamplingMetadata(
    const PcSamplingStats& stats, const std::string& status);

}  // namespace deepcontext::cupti
