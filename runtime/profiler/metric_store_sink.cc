#include "runtime/profiler/metric_store_sink.h"

#include <string>

#include "deepcontext/dlmonitor.h"

namespace deepcontext::profiler {

// GpuNodeKind values are passed to DLMonitor unchanged.
static_assert(static_cast<int>(gpu::GpuNodeKind::kApi) == DLMONITOR_FRAME_GPU_API);
static_assert(static_cast<int>(gpu::GpuNodeKind::kKernel) == DLMONITOR_FRAME_GPU_KERNEL);
static_assert(static_cast<int>(gpu::GpuNodeKind::kMemcpy) == DLMONITOR_FRAME_GPU_MEMCPY);
static_assert(static_cast<int>(gpu::GpuNodeKind::kMemset) == DLMONITOR_FRAME_GPU_MEMSET);
static_assert(static_cast<int>(gpu::GpuNodeKind::kSync) == DLMONITOR_FRAME_GPU_SYNC);
static_assert(static_cast<int>(gpu::GpuNodeKind::kInstruction) ==
              DLMONITOR_FRAME_GPU_INSTRUCTION);

MetricStoreSink::MetricStoreSink(MetricStore& store) : store_(store) {
  for (size_t i = 0; i < ids_.size(); ++i) {
    const gpu::GpuMetricInfo& info = gpu::MetricInfo(static_cast<gpu::GpuMetric>(i));
    ids_[i] = store_.Register(std::string(info.name), std::string(info.unit),
                              std::string(info.description));
  }
}

gpu::ContextId MetricStoreSink::ChildAt(gpu::ContextId parent, gpu::GpuNodeKind kind,
                                        std::string_view name, std::string_view file,
                                        uint32_t line) {
  if (parent == 0) return 0;
  // DLMonitor wants NUL-terminated strings; attribution caches children, so
  // these copies happen once per distinct node.
  const std::string owned_name(name);
  const std::string owned_file(file);
  dlmonitor_frame_t frame{};
  frame.struct_size = sizeof(frame);
  frame.kind = static_cast<dlmonitor_frame_kind_t>(kind);
  frame.name = owned_name.c_str();
  frame.file = owned_file.c_str();
  frame.line = line;
  dlmonitor_context_t child = 0;
  if (dlmonitor_context_child(parent, &frame, &child) != DLMONITOR_OK) return 0;
  return child;
}

gpu::ContextId MetricStoreSink::Child(gpu::ContextId parent, gpu::GpuNodeKind kind,
                                 std::string_view name) {
  return ChildAt(parent, kind, name, "", 0);
}

void MetricStoreSink::Add(gpu::ContextId context, gpu::GpuMetric metric, double value) {
  const auto index = static_cast<size_t>(metric);
  if (context == 0 || index >= ids_.size()) return;
  store_.Add(context, ids_[index], value);
}

int MetricStoreSink::RegisterNamedMetric(std::string_view name,
                                         std::string_view unit,
                                         std::string_view description) {
  return static_cast<int>(store_.Register(std::string(name), std::string(unit),
                                          std::string(description)));
}

void MetricStoreSink::AddNamed(gpu::ContextId context, int metric, double value) {
  if (context == 0 || metric < 0) return;
  store_.Add(context, static_cast<MetricId>(metric), value);
}

MetricId MetricStoreSink::metric_id(gpu::GpuMetric metric) const {
  const auto index = static_cast<size_t>(metric);
  return index < ids_.size() ? ids_[index] : ids_[0];
}

}  // namespace deepcontext::profiler
