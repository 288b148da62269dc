#include "runtime/cupti/gpu_backend.h"

#include "runtime/cupti/gpu_backend_state.h"

namespace deepcontext::cupti {

GpuBackend::GpuBackend(std::unique_ptr<gpu::ContextSink> sink,
                       std::unique_ptr<GpuBackendState> state)
    : sink_(std::move(sink)), state_(std::move(state)) {}

GpuBackend::~GpuBackend() = default;

StatusOr<std::unique_ptr<GpuBackend>> GpuBackend::Start(const SinkFactory& make_sink) {
  try {
    const CuptiLibrary& library = CuptiLibrary::Get();
    if (!library.available()) {
      return Status::Error("no GPU activity recorded: CUPTI " + library.status().message());
    }
    StatusOr<std::unique_ptr<CudaDriver>> driver = CudaDriver::Load();
    if (!driver.ok()) {
      return Status::Error("no GPU activity recorded: " + driver.status().message());
    }
    std::unique_ptr<gpu::ContextSink> sink = make_sink();
    if (sink == nullptr) {
      return Status::Error("no GPU activity recorded: no sink for the GPU metrics");
    }
    auto state = std::make_unique<GpuBackendState>(*sink, library, std::move(*driver));
    if (Status started = state->Start(); !started.ok()) {
      state->Stop();
      return started;
    }
    return std::unique_ptr<GpuBackend>(new GpuBackend(std::move(sink), std::move(state)));
  } catch (...) {
    return Status::Error("no GPU activity recorded: out of memory while starting");
  }
}

const std::string& GpuBackend::description() const { return state_->description(); }

void GpuBackend::Flush() {
  try {
    state_->Flush();
  } catch (...) {
    // Out of memory while crediting: the profile lacks those records.
  }
}

void GpuBackend::SetTracing(bool on) {
  try {
    state_->SetTracing(on);
  } catch (...) {
  }
}

void GpuBackend::SetShortestPause(int64_t pause_ns) {
  state_->SetShortestPause(pause_ns);
}

std::vector<std::pair<std::string, std::string>> GpuBackend::Metadata() const {
  try {
    return state_->Metadata();
  } catch (...) {
    return {};
  }
}

void GpuBackend::Stop() {
  try {
    state_->Stop();
  } catch (...) {
  }
}

}  // namespace deepcontext::cupti
