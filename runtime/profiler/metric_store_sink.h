// The production gpu::ContextSink: GPU nodes become children in DLMonitor's
// process-wide context tree and samples go into the profiler's MetricStore,
// so GPU metrics are written with the rest of the profile. The GPU
// backends (runtime/cupti/) only know the interface; the session hands
// them this sink (gpu_source.cc). No vendor headers.
#pragma once

#include <array>
#include <string_view>

#include "runtime/gpu/context_sink.h"
#include "runtime/profiler/metric_store.h"

namespace deepcontext::profiler {

class MetricStoreSink : public gpu::ContextSink {
 public:
  // Registers the GPU metrics (MetricInfo of every gpu::GpuMetric) in `store`,
  // which must outlive the sink. Registration is idempotent by name, so
  // several sinks on one store share the ids.
  explicit MetricStoreSink(MetricStore& store);

  // dlmonitor_context_child() with the frame kind matching `kind`.
  gpu::ContextId ChildAt(gpu::ContextId parent, gpu::GpuNodeKind kind,
                         std::string_view name, std::string_view file,
                         uint32_t line) override;
  gpu::ContextId Child(gpu::ContextId parent, gpu::GpuNodeKind kind,
                  std::string_view name) override;
  void Add(gpu::ContextId context, gpu::GpuMetric metric, double value) override;
  int RegisterNamedMetric(std::string_view name, std::string_view unit,
                          std::string_view description) override;
  void AddNamed(gpu::ContextId context, int metric, double value) override;

  // The store's id of `metric`.
  MetricId metric_id(gpu::GpuMetric metric) const;

 private:
  MetricStore& store_;
  std::array<MetricId, static_cast<size_t>(gpu::GpuMetric::kCount)> ids_{};
};

}  // namespace deepcontext::profiler
