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

// With a GPU the backend runs; without one (CI) it says why. Either way
// nothing crashes and the backend can be flushed and stopped repeatedly.
void StartAndCheck(SinkFactory& sinks) {
  std::string status;
  std::unique_ptr<GpuBackend> backend = GpuBackend::Start(sinks.Get(), &status);
  ASSERT_FALSE(status.empty());
  std::printf("status: %s\n", status.c_str());
  if (backend == nullptr) {
    EXPECT_NE(status.find(kNotRecorded), std::string::npos) << status;
    return;
  }
  EXPECT_NE(status.find("tracing kernels"), std::string::npos) << status;
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
  if (!CuptiLibrary::Get().available()) GTEST_SKIP() << CuptiLibrary::Get().error();
  setenv("DEEPCONTEXT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  SinkFactory sinks;
  std::string status;
  EXPECT_EQ(GpuBackend::Start(sinks.Get(), &status), nullptr);
  unsetenv("DEEPCONTEXT_CUDA_DRIVER");
  EXPECT_EQ(status.rfind(std::string(kNotRecorded) + ": no NVIDIA driver", 0), 0u)
      << status;
  EXPECT_EQ(sinks.made, 0);  // nothing registered for a backend that cannot run
}

// A driver library is found, but CUPTI cannot attach to a real driver
// (none here): Start fails in cuptiSubscribe and must undo everything it
// did, including its DLMonitor reference.
TEST(GpuBackendTest, FailureAfterLoadingCleansUp) {
  if (!CuptiLibrary::Get().available()) GTEST_SKIP() << CuptiLibrary::Get().error();
  setenv("DEEPCONTEXT_CUDA_DRIVER", DEEPCONTEXT_FAKE_CUDA_DRIVER, 1);
  SinkFactory sinks;
  for (int attempt = 0; attempt < 2; ++attempt) StartAndCheck(sinks);
  unsetenv("DEEPCONTEXT_CUDA_DRIVER");
  dlmonitor_context_t context = 0;
  EXPECT_EQ(dlmonitor_context_current(&context), DLMONITOR_ERROR_NOT_INITIALIZED);
}

TEST(GpuBackendTest, StatusPointerIsOptional) {
  SinkFactory sinks;
  std::unique_ptr<GpuBackend> backend = GpuBackend::Start(sinks.Get(), nullptr);
  if (backend != nullptr) backend->Stop();
}

}  // namespace
}  // namespace deepcontext::cupti
