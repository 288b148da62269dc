#include "runtime/cupti/pc_sampling_aggregator.h"

#include <cstdio>

namespace deepcontext::cupti {
namespace {

constexpr std::string_view kStallPrefix = "smsp__pcsamp_warps_issue_stalled_";
constexpr std::string_view kNotIssued = "_not_issued";

struct Meaning {
  std::string_view metric;
  std::string_view text;
};

// NVIDIA's stall reasons (Nsight Compute's "Warp State" descriptions), in
// the words a user of a slow kernel needs.
constexpr Meaning kMeanings[] = {
    {"gpu_stall_long_scoreboard",
     "waiting for global/local memory (L1TEX): memory-bound or poor locality"},
    {"gpu_stall_short_scoreboard",
     "waiting for shared memory or special-function (MUFU) results"},
    {"gpu_stall_wait",
     "fixed-latency execution dependency: too little instruction-level parallelism"},
    {"gpu_stall_math_pipe_throttle",
     "math pipe busy: compute-bound on that pipe"},
    {"gpu_stall_mio_throttle",
     "memory input/output queue full: too many shared-memory or special instructions"},
    {"gpu_stall_lg_throttle",
     "local/global memory queue full: too many small memory instructions"},
    {"gpu_stall_tex_throttle", "texture/L1TEX queue full"},
    {"gpu_stall_barrier", "waiting at a block-wide barrier (__syncthreads)"},
    {"gpu_stall_membar", "waiting at a memory barrier"},
    {"gpu_stall_branch_resolving", "waiting for a branch target to be computed"},
    {"gpu_stall_no_instructions", "instruction cache miss or after a branch"},
    {"gpu_stall_not_selected",
     "ready but another warp was picked: the scheduler is busy (good)"},
    {"gpu_stall_selected", "issuing: the warp was doing work"},
    {"gpu_stall_dispatch_stall", "dispatch stalled by a pipeline conflict"},
    {"gpu_stall_drain", "waiting for memory writes to drain at exit"},
    {"gpu_stall_imc_miss", "constant cache miss"},
    {"gpu_stall_sleeping", "warp sleeping (nanosleep or yield)"},
    {"gpu_stall_misc", "miscellaneous hardware reason"},
    {"gpu_stall_gmma", "waiting for warpgroup matrix (tensor core) operations"},
};

}  // namespace

std::string StallMetricName(std::string_view cupti_name) {
  if (cupti_name.ends_with(kNotIssued)) return "";
  std::string_view reason = cupti_name;
  if (reason.starts_with(kStallPrefix)) reason.remove_prefix(kStallPrefix.size());
  std::string out = "gpu_stall_";
  for (char c : reason) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    out += plain ? c : (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : '_';
  }
  return reason.empty() ? "" : out;
}

std::string_view StallReasonMeaning(std::string_view metric_name) {
  for (const Meaning& meaning : kMeanings) {
    if (meaning.metric == metric_name) return meaning.text;
  }
  return "";
}

PcSampleAggregator::PcSampleAggregator(gpu::ContextSink& sink) : sink_(sink) {}

void PcSampleAggregator::SetStallReasons(
    std::span<const std::pair<uint32_t, std::string>> reasons) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (samples_metric_ < 0) {
    samples_metric_ = sink_.RegisterNamedMetric(
        "gpu_samples", "samples",
        "GPU instruction samples (CUPTI PC sampling), every stall reason");
  }
  for (const auto& [index, name] : reasons) {
    const std::string metric = StallMetricName(name);
    if (metric.empty()) {
      reason_metrics_.erase(index);
      continue;
    }
    std::string description = "GPU instruction samples stalled: " + name;
    if (const std::string_view meaning = StallReasonMeaning(metric); !meaning.empty()) {
      description = "GPU instruction samples: " + std::string(meaning);
    }
    reason_metrics_[index] = sink_.RegisterNamedMetric(metric, "samples", description);
  }
}

void PcSampleAggregator::SetSourceResolver(SourceResolver resolver) {
  std::lock_guard<std::mutex> guard(mutex_);
  resolver_ = std::move(resolver);
}

void PcSampleAggregator::OnLaunch(uint32_t correlation_id, gpu::ContextId context,
                                  std::string_view api_name) {
  Remember(correlation_id, Launch{context, std::string(api_name), false, nullptr});
}

void PcSampleAggregator::OnGraphLaunch(uint32_t correlation_id, gpu::ContextId context,
                                       std::string_view api_name,
                                       std::shared_ptr<const GraphKernelTable> kernels) {
  Remember(correlation_id, Launch{context, std::string(api_name), true, std::move(kernels)});
}

void PcSampleAggregator::Remember(uint32_t correlation_id, Launch launch) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto [it, inserted] = launches_.try_emplace(correlation_id);
  it->second = std::move(launch);
  if (!inserted) return;
  launch_order_.push_back(correlation_id);
  while (launch_order_.size() > kMaxLaunches) {
    launches_.erase(launch_order_.front());
    launch_order_.pop_front();
  }
}

gpu::ContextId PcSampleAggregator::InstructionNode(gpu::ContextId context,
                                                   std::string_view api,
                                                   const PcRecord& record) {
  auto key = std::make_tuple(context, std::string(api),
                             std::string(record.function_name), record.cubin_crc,
                             record.pc_offset);
  if (auto it = instructions_.find(key); it != instructions_.end()) return it->second;
  gpu::ContextId node = sink_.Child(context, gpu::GpuNodeKind::kApi, api);
  if (node != 0) {
    node = sink_.Child(node, gpu::GpuNodeKind::kKernel, record.function_name);
  }
  std::string file;
  uint32_t line = 0;
  if (node != 0) {
    char name[32];
    std::snprintf(name, sizeof(name), "pc 0x%04llx",
                  static_cast<unsigned long long>(record.pc_offset));
    if (!resolver_ ||
        !resolver_(record.cubin_crc, record.function_name, record.pc_offset, &file, &line)) {
      file.clear();
      line = 0;
    }
    node = sink_.ChildAt(node, gpu::GpuNodeKind::kInstruction, name, file, line);
  }
  if (node == 0) return 0;  // not cached: the sink may succeed later
  instructions_.emplace(std::move(key), node);
  ++stats_.instructions;
  if (line != 0) ++stats_.instructions_with_line;
  return node;
}

void PcSampleAggregator::OnPc(const PcRecord& record) {
  std::lock_guard<std::mutex> guard(mutex_);
  uint64_t total = 0;
  for (const StallSamples& stall : record.stalls) {
    if (reason_metrics_.count(stall.reason_index) != 0) total += stall.samples;
  }
  if (total == 0) return;
  auto launch = launches_.find(record.correlation_id);
  if (launch == launches_.end()) {
    stats_.unattributed_samples += total;
    return;
  }
  gpu::ContextId context = launch->second.context;
  std::string_view api = launch->second.api;
  const CaptureSite* site =
      launch->second.kernels != nullptr
          ? UniqueSite(*launch->second.kernels, record.function_name)
          : nullptr;
  if (site != nullptr) {
    context = site->context;
    api = site->api;
  }
  const gpu::ContextId node = InstructionNode(context, api, record);
  if (node == 0) {
    stats_.unattributed_samples += total;
    return;
  }
  stats_.samples += total;
  if (site != nullptr) {
    stats_.graph_samples_at_capture += total;
  } else if (launch->second.graph) {
    stats_.graph_samples_at_launch += total;
  }
  sink_.AddNamed(node, samples_metric_, static_cast<double>(total));
  for (const StallSamples& stall : record.stalls) {
    auto it = reason_metrics_.find(stall.reason_index);
    if (it == reason_metrics_.end() || it->second < 0 || stall.samples == 0) continue;
    sink_.AddNamed(node, it->second, static_cast<double>(stall.samples));
  }
}

void PcSampleAggregator::OnBatch(uint64_t dropped, uint64_t non_user,
                                 bool hardware_buffer_full) {
  std::lock_guard<std::mutex> guard(mutex_);
  stats_.dropped_samples += dropped;
  stats_.non_user_samples += non_user;
  if (hardware_buffer_full) ++stats_.hardware_buffer_full;
}

PcSamplingStats PcSampleAggregator::Stats() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return stats_;
}

std::set<uint64_t> PcSampleAggregator::SampledCubins() const {
  std::lock_guard<std::mutex> guard(mutex_);
  std::set<uint64_t> crcs;
  for (const auto& [key, node] : instructions_) crcs.insert(std::get<3>(key));
  return crcs;
}

std::vector<std::pair<std::string, std::string>> PcSamplingMetadata(
    const PcSamplingStats& stats, const std::string& status) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("gpu_samples", status);
  if (status.starts_with("off")) {
    out.emplace_back("warning_gpu_samples", "GPU instruction samples " + status);
    return out;
  }
  out.emplace_back("gpu_samples_attributed", std::to_string(stats.samples));
  out.emplace_back("gpu_samples_instructions", std::to_string(stats.instructions));
  out.emplace_back("gpu_samples_instructions_with_line",
                   std::to_string(stats.instructions_with_line));
  if (stats.unattributed_samples > 0) {
    out.emplace_back("gpu_samples_unattributed",
                     std::to_string(stats.unattributed_samples));
  }
  if (stats.dropped_samples > 0 || stats.hardware_buffer_full > 0) {
    out.emplace_back("gpu_samples_dropped", std::to_string(stats.dropped_samples));
    out.emplace_back("warning_gpu_samples",
                     std::to_string(stats.dropped_samples) +
                         " GPU instruction samples were dropped (hardware buffer "
                         "full); stall shares are still representative");
  }
  if (stats.graph_samples_at_capture > 0) {
    out.emplace_back("gpu_samples_graph_at_capture",
                     std::to_string(stats.graph_samples_at_capture));
  }
  if (stats.graph_samples_at_launch > 0) {
    out.emplace_back("gpu_samples_graph_at_launch",
                     std::to_string(stats.graph_samples_at_launch));
  }
  if (stats.non_user_samples > 0) {
    out.emplace_back("gpu_samples_non_user", std::to_string(stats.non_user_samples));
  }
  return out;
}

}  // namespace deepcontext::cupti
