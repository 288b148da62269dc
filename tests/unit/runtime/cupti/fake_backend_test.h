// A test fixture for the GPU backend without a GPU: the fake CUPTI
// (fake_cupti.h) and the fake driver (fake_cuda_driver.cc), with device 0
// in use and its context current on the test's thread, so that a wait for
// the GPU is counted (GpuWaits).
#pragma once

#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/cupti/cupti_loader.h"
#include "runtime/cupti/gpu_backend_state.h"
#include "tests/unit/runtime/cupti/fake_cupti.h"
#include "tests/unit/runtime/gpu/fake_context_sink.h"

namespace deepcontext::cupti::fake {

// ASSERT_TRUE(IsOk(state_->Start())) shows the error when there is one.
inline ::testing::AssertionResult IsOk(const Status& status) {
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status.message();
}

class FakeBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ResetFakeCupti();
    setenv("DEEPCONTEXT_CUDA_DRIVER", DEEPCONTEXT_FAKE_CUDA_DRIVER, 1);
    unsetenv("DEEPCONTEXT_CUPTI_DETACH");
    fake_driver_ = dlopen(DEEPCONTEXT_FAKE_CUDA_DRIVER, RTLD_NOW);
    ASSERT_NE(fake_driver_, nullptr) << dlerror();
    Driver<void (*)(int, int)>("fake_cuda_set_primary_active")(0, 1);
    primary_ = Driver<CUcontext (*)(int)>("fake_cuda_primary_context")(0);
    Driver<void (*)(CUcontext)>("fake_cuda_set_current_context")(primary_);
  }

  void TearDown() override {
    state_.reset();
    Driver<void (*)(CUcontext)>("fake_cuda_set_current_context")(nullptr);
    Driver<void (*)(int, int)>("fake_cuda_set_primary_active")(0, 0);
    dlclose(fake_driver_);
    unsetenv("DEEPCONTEXT_CUDA_DRIVER");
    unsetenv("DEEPCONTEXT_CUPTI_DETACH");
  }

  // A backend over the fake CUPTI reporting `version` (not started).
  void MakeState(uint32_t version = 130001) {
    MakeStateFrom(FakeCuptiFunctions(), version, "fake-cupti");
  }

  // A backend over `functions` (the fake's, some replaced), as if loaded
  // from `path` (not started).
  void MakeStateFrom(const CuptiFunctions& functions, uint32_t version,
                     const std::string& path) {
    library_ = CuptiLibrary::FromFunctions(functions, version, path);
    StatusOr<std::unique_ptr<CudaDriver>> driver = CudaDriver::Load();
    ASSERT_TRUE(driver.ok()) << driver.status().message();
    state_ = std::make_unique<GpuBackendState>(sink_, *library_, std::move(*driver));
  }

  // The samples of metric `name` over every context.
  gpu::FakeContextSink::Sample Total(const std::string& name) const {
    for (int i = 0; i < static_cast<int>(gpu::GpuMetric::kCount); ++i) {
      const auto metric = static_cast<gpu::GpuMetric>(i);
      if (gpu::MetricInfo(metric).name == name) return sink_.Total(metric);
    }
    ADD_FAILURE() << "no GPU metric named " << name;
    return {};
  }

  // Synchronizations of device 0's context so far.
  int GpuWaits() { return Driver<int (*)(CUcontext)>("fake_cuda_synchronize_count")(primary_); }

  static std::string Value(const std::vector<std::pair<std::string, std::string>>& metadata,
                           const std::string& key) {
    for (const auto& [name, value] : metadata) {
      if (name == key) return value;
    }
    return "";
  }

  template <typename Fn>
  Fn Driver(const char* name) {
    return reinterpret_cast<Fn>(dlsym(fake_driver_, name));
  }

  void* fake_driver_ = nullptr;
  CUcontext primary_ = nullptr;
  std::unique_ptr<CuptiLibrary> library_;
  gpu::FakeContextSink sink_;
  std::unique_ptr<GpuBackendState> state_;
};

}  // namespace deepcontext::cupti::fake
