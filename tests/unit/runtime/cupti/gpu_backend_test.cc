#include "runtime/cupti/gpu_backend.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "deepcontext/dlmonitor.h"
#include "runtime/cupti/cupti_loader.h"
#include "tests/unit/runtime/gpu/fake_context_sink.h"

namespace deepcontext::cupti {
namespace {

constexpr char kNotRecorded[] = "no GPU activity recorded";

bool HasKey(const std::vector<std::pair<std::string, std::string>>& metadata,
            const std::string& key) {
  for (const auto& entry : metadata) {
    if (entry.first == key) return true;
  }
  return false;
}

// Makes in-memory sinks, counting them.
struct SinkFactory {
  GpuBackend::SinkFactory Get() {
    return [this] {
      ++made;
      return std::make_unique<gpu::FakeContextSink>();
    };
  }
  int made = 0;
};

// With a GPU the backend runs and says what it traces; without one (CI) it
// says why not. Either way nothing crashes and the backend can be flushed
// and stopped repeatedly.
void StartAndCheck(SinkFactory& sinks) {
  StatusOr<std::unique_ptr<GpuBackend>> started = GpuBackend::Start(sinks.Get());
  if (!started.ok()) {
    const std::string& why = started.status().message();
    std::printf("status: %s\n", why.c_str());
    EXPECT_NE(why.find(kNotRecorded), std::string::npos) << why;
    return;
  }
  std::unique_ptr<GpuBackend> backend = std::move(started).value();
  ASSERT_NE(backend, nullptr);
  const std::string& description = backend->description();
  std::printf("status: %s\n", description.c_str());
  EXPECT_NE(description.find("tracing kernels"), std::string::npos) << description;
  backend->Flush();
  const auto metadata = backend->Metadata();
  EXPECT_TRUE(HasKey(metadata, "cupti_version"));
  EXPECT_TRUE(HasKey(metadata, "gpu_dropped_records"));
  backend->Stop();
  backend->Stop();
  backend->Flush();
}

TEST(GpuBackendTest, StartEitherRunsOrExplainsWhyNot) {
  SinkFactory sinks;
  StartAndCheck(sinks);
}

TEST(GpuBackendTest, MissingDriverIsReportedBeforeCuptiIsTouched) {
  if (!CuptiLibrary::Get().available()) GTEST_SKIP() << CuptiLibrary::Get().status().message();
  setenv("DEEPCONTEXT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  SinkFactory sinks;
  const StatusOr<std::unique_ptr<GpuBackend>> backend = GpuBackend::Start(sinks.Get());
  unsetenv("DEEPCONTEXT_CUDA_DRIVER");
  ASSERT_FALSE(backend.ok());
  const std::string& why = backend.status().message();
  EXPECT_EQ(why.rfind(std::string(kNotRecorded) + ": no NVIDIA driver", 0), 0u) << why;
  EXPECT_EQ(sinks.made, 0);  // nothing registered for a backend that cannot run
}

// A driver library is found, but CUPTI cannot attach to a real driver
// (none here): Start fails in cuptiSubscribe and must undo everything it
// did, including its DLMonitor reference.
TEST(GpuBackendTest, FailureAfterLoadingCleansUp) {
  if (!CuptiLibrary::Get().available()) GTEST_SKIP() << CuptiLibrary::Get().status().message();
  setenv("DEEPCONTEXT_CUDA_DRIVER", DEEPCONTEXT_FAKE_CUDA_DRIVER, 1);
  SinkFactory sinks;
  for (int attempt = 0; attempt < 2; ++attempt) StartAndCheck(sinks);
  unsetenv("DEEPCONTEXT_CUDA_DRIVER");
  dlmonitor_context_t context = 0;
  EXPECT_EQ(dlmonitor_context_current(&context), DLMONITOR_ERROR_NOT_INITIALIZED);
}

}  // namespace
}  // namespace deepcontext::cupti
