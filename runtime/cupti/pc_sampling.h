// `deepcontext run --gpu-samples` in the backend: the PC sampling entry
// points, the aggregator and the CUPTI session, started when
// DEEPCONTEXT_GPU_SAMPLES=1. GpuBackendState calls it at kernel launches,
// flushes and stop, and adds its metadata.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/cupti/graph_kernel_sites.h"
#include "runtime/cupti/pc_sampling_aggregator.h"
#include "runtime/cupti/pc_sampling_session.h"
#include "runtime/cupti/pc_sampling_source_map.h"

namespace deepcontext::cupti {

class CuptiLibrary;

class PcSampling {
 public:
  // nullptr when not asked for. When asked for but impossible (entry
  // points missing), an object that samples nothing and says why in its
  // metadata.
  static std::unique_ptr<PcSampling> StartIfAsked(gpu::ContextSink& sink,
                                                  const CuptiLibrary& library);
  // The same with the entry points given (tests).
  PcSampling(gpu::ContextSink& sink, const PcSamplingFunctions* functions,
             PcSamplingOptions options, std::string status,
             std::function<std::string(int)> result_text);
  ~PcSampling();

  // How a context's GPU is claimed before sampling there
  // (counter_claims.h). [before the first launch]
  void SetClaimDevice(gpu::ClaimDevice claim) {
    if (session_ != nullptr) session_->SetClaimDevice(std::move(claim));
  }
  // A kernel launch's API entry. [application threads]
  void OnKernelLaunch(uint32_t correlation_id, gpu::ContextId context,
                      std::string_view api_name, void* cuda_context);
  // A graph launch's API entry (`exec`: the executable graph as an
  // integer): its samples go where the graph's kernels were captured.
  // [application threads]
  void OnGraphLaunch(uint32_t correlation_id, gpu::ContextId context,
                     std::string_view api_name, void* cuda_context, uint64_t exec);
  // Fed by the graph callbacks while sampling is on. [any thread]
  GraphKernelSites& graph_kernel_sites() { return graph_kernel_sites_; }
  // A module loaded: its cubin is kept for source lines. [any thread]
  void OnModuleLoaded(const void* cubin, size_t size);
  void Drain();
  void Stop();
  // Also writes the cubins of the sampled instructions into the cubin
  // folder (gpu_samples_cubin_dir, gpu_samples_cubins), for their SASS.
  std::vector<std::pair<std::string, std::string>> Metadata() const;
  // Where cubins go: DEEPCONTEXT_CUBIN_DIR, else the profile path
  // DEEPCONTEXT_OUTPUT with ".cubins" for ".dctx"; "" keeps none.
  void SetCubinDirectory(std::string dir) { cubin_dir_ = std::move(dir); }
  static std::string CubinDirectoryFromEnvironment();
  PcSamplingStats Stats() const { return aggregator_.Stats(); }

 private:
  std::unique_ptr<PcSamplingFunctions> owned_functions_;
  PcSampleAggregator aggregator_;
  GraphKernelSites graph_kernel_sites_;
  std::unique_ptr<CubinSourceMap> source_map_;   // null when impossible
  std::unique_ptr<PcSamplingSession> session_;  // null when impossible
  std::string status_;  // why not, when session_ is null
  std::string warning_;
  std::string cubin_dir_;
};

}  // namespace deepcontext::cupti
