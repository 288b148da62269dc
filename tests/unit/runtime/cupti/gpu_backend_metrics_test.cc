// --gpu-metrics in the live backend over the fake CUPTI: the flag reaches the
// backend, and a libcupti without the range profiler (before CUDA 12.6)
// leaves launches unmeasured, tracing untouched, and the reason in the
// metadata. The measurement itself: gpu_metrics_test.cc.
#include <dlfcn.h>
#include <stdlib.h>

#include <string>

#include "tests/unit/runtime/cupti/fake_backend_test.h"

namespace deepcontext::cupti::fake {
namespace {

class GpuBackendMetricsTest : public FakeBackendTest {
 protected:
  void SetUp() override {
    FakeBackendTest::SetUp();
    // A loaded library with PC sampling but no range profiler entry points.
    library_handle_ = dlopen(DEEPCONTEXT_FAKE_PC_SAMPLING, RTLD_NOW);
    ASSERT_NE(library_handle_, nullptr) << dlerror();
  }
  void TearDown() override {
    FakeBackendTest::TearDown();
    unsetenv("DEEPCONTEXT_GPU_METRICS");
    unsetenv("DEEPCONTEXT_GPU_METRICS_KERNELS");
    dlclose(library_handle_);
  }
  void MakeState() {
    MakeStateFrom(FakeCuptiFunctions(), 130001, DEEPCONTEXT_FAKE_PC_SAMPLING);
  }
  static void Launch(uint32_t correlation_id) {
    FakeCuptiState& s = FakeCupti();
    CUresult result = CUDA_SUCCESS;
    cuLaunchKernel_params params{};
    params.f = reinterpret_cast<CUfunction>(0x77);
    CUpti_CallbackData data{};
    data.functionName = "cuLaunchKernel";
    data.correlationId = correlation_id;
    data.functionReturnValue = &result;
    data.functionParams = &params;
    data.context = reinterpret_cast<CUcontext>(0x5000);
    for (CUpti_ApiCallbackSite site : {CUPTI_API_ENTER, CUPTI_API_EXIT}) {
      data.callbackSite = site;
      s.callback(s.userdata, CUPTI_CB_DOMAIN_DRIVER_API,
                 CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &data);
    }
  }

  void* library_handle_ = nullptr;
};

TEST_F(GpuBackendMetricsTest, WithoutTheRangeProfilerLaunchesRunUnmeasured) {
  setenv("DEEPCONTEXT_GPU_METRICS", "1", 1);
  setenv("DEEPCONTEXT_GPU_METRICS_KERNELS", "many", 1);
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  Launch(41);
  state_->Stop();
  const auto metadata = state_->Metadata();
  EXPECT_EQ(Value(metadata, "gpu_metrics"),
            "off: libcupti has no cuptiProfilerInitialize (the range profiler needs CUPTI "
            "12.6+)");
  EXPECT_EQ(Value(metadata, "warning_gpu_metrics"),
            "GPU hardware counters off: libcupti has no cuptiProfilerInitialize (the range "
            "profiler needs CUPTI 12.6+)");
  EXPECT_EQ(Value(metadata, "gpu_metrics_launches_per_kernel"), "5");
  EXPECT_NE(Value(metadata, "warning_gpu_metrics_kernels").find("=many"), std::string::npos);
  EXPECT_EQ(Value(metadata, "gpu_metrics_measured"), "0");
}

TEST_F(GpuBackendMetricsTest, WithoutTheFlagNothingIsSaid) {
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  Launch(41);
  state_->Stop();
  EXPECT_EQ(Value(state_->Metadata(), "gpu_metrics"), "");
}

}  // namespace
}  // namespace deepcontext::cupti::fake
