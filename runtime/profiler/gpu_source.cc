#include "runtime/profiler/gpu_source.h"

#include <cstdlib>
#include <cstring>

#if DEEPCONTEXT_HAVE_GPU_BACKEND
#include "runtime/cupti/gpu_backend.h"
#include "runtime/profiler/metric_store_sink.h"
#endif

namespace deepcontext::profiler {
namespace {

#if DEEPCONTEXT_HAVE_GPU_BACKEND
class CuptiSource : public GpuSource {
 public:
  explicit CuptiSource(std::unique_ptr<cupti::GpuBackend> backend)
      : backend_(std::move(backend)) {}
  void Flush() override { backend_->Flush(); }
  void Stop() override { backend_->Stop(); }
  void SetTracing(bool on) override { backend_->SetTracing(on); }
  void SetShortestPause(int64_t pause_ns) override {
    backend_->SetShortestPause(pause_ns);
  }
  std::vector<std::pair<std::string, std::string>> Metadata() const override {
    return backend_->Metadata();
  }

 private:
  std::unique_ptr<cupti::GpuBackend> backend_;
};
#endif

}  // namespace

std::unique_ptr<GpuSource> StartGpuSource(MetricStore& store,
                                          std::string* status) {
  if (const char* flag = std::getenv("DEEPCONTEXT_GPU");
      flag != nullptr && std::strcmp(flag, "0") == 0) {
    *status = "no GPU activity recorded: GPU profiling turned off (DEEPCONTEXT_GPU=0)";
    return nullptr;
  }
#if DEEPCONTEXT_HAVE_GPU_BACKEND
  // The sink is made only once the backend knows it can run, so a profile
  // without GPU activity registers no GPU metrics.
  StatusOr<std::unique_ptr<cupti::GpuBackend>> backend = cupti::GpuBackend::Start(
      [&store] { return std::make_unique<MetricStoreSink>(store); });
  if (!backend.ok()) {
    *status = backend.status().message();  // why no GPU activity is recorded
    return nullptr;
  }
  *status = backend.value()->description();
  return std::make_unique<CuptiSource>(std::move(backend).value());
#else
  (void)store;
  *status =
      "no GPU activity recorded: this build has no GPU backend (CUDA/CUPTI "
      "headers were not found when it was built)";
  return nullptr;
#endif
}

}  // namespace deepcontext::profiler
