// The production ContextSink: GPU nodes become children in DLMonitor's
// process-wide context tree and samples go into the profiler's MetricStore,
// so GPU metrics are written with the rest of the profile. No vendor
// headers.
#pragma once

#include <array>
#include <string_view>

#include "runtime/cupti/context_sink.h"
#include "runtime/profiler/metric_store.h"

namespace deepcontext::cupti {

class MetricStoreSink : public ContextSink {
 public:
  // Registers the GPU metrics (MetricInfo of every GpuMetric) in `store`,
  // which must outlive the sink. Registration is idempotent by name, so
  // several sinks on one store share the ids.
  explicit MetricStoreSink(profiler::MetricStore& store);

  // dlmonitor_context_child() with the frame kind matching `kind`.
  ContextId Child(ContextId parent, GpuNodeKind kind,
                  std::string_view name) override;
  void Add(ContextId context, GpuMetric metric, double value) override;

  // The store's id of `metric`.
  profiler::MetricId metric_id(GpuMetric metric) const;

 private:
  profiler::MetricStore& store_;
  std::array<profiler::MetricId, static_cast<size_t>(GpuMetric::kCount)> ids_{};
};

}  // namespace deepcontext::cupti
