// --gpu-samples in the live backend over the fake CUPTI: the PC sampling
// entry points come from a fake library found already loaded, as the real
// ones come from the loaded libcupti; the test checks that launches enable
// and drain sampling, that stopping disables it, that module loads feed the
// source lines, and what the metadata says.
#include <dlfcn.h>
#include <stdlib.h>

#include <string>

#include "tests/unit/runtime/cupti/fake_backend_test.h"

namespace deepcontext::cupti::fake {
namespace {

class GpuBackendPcSamplingTest : public FakeBackendTest {
 protected:
  void SetUp() override {
    FakeBackendTest::SetUp();
    library_handle_ = dlopen(DEEPCONTEXT_FAKE_PC_SAMPLING, RTLD_NOW);
    ASSERT_NE(library_handle_, nullptr) << dlerror();
    Call<void (*)()>("fake_pc_reset")();
    setenv("DEEPCONTEXT_GPU_SAMPLES", "1", 1);
  }
  void TearDown() override {
    FakeBackendTest::TearDown();
    unsetenv("DEEPCONTEXT_GPU_SAMPLES");
    dlclose(library_handle_);
  }

  void MakeSamplingState() {
    library_ = CuptiLibrary::FromFunctions(FakeCuptiFunctions(), 130001,
                                           DEEPCONTEXT_FAKE_PC_SAMPLING);
    std::string error;
    std::unique_ptr<CudaDriver> driver = CudaDriver::Load(&error);
    ASSERT_NE(driver, nullptr) << error;
    state_ = std::make_unique<GpuBackendState>(sink_, *library_, std::move(driver));
  }

  // A cuLaunchKernel in CUDA context `context`, as CUPTI reports it.
  static void Launch(uint32_t correlation_id, CUcontext context) {
    FakeCuptiState& s = FakeCupti();
    CUresult result = CUDA_SUCCESS;
    CUpti_CallbackData data{};
    data.functionName = "cuLaunchKernel";
    data.correlationId = correlation_id;
    data.functionReturnValue = &result;
    data.context = context;
    for (CUpti_ApiCallbackSite site : {CUPTI_API_ENTER, CUPTI_API_EXIT}) {
      data.callbackSite = site;
      s.callback(s.userdata, CUPTI_CB_DOMAIN_DRIVER_API,
                 CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &data);
    }
  }

  static void ModuleLoaded(const char* cubin, size_t size) {
    FakeCuptiState& s = FakeCupti();
    CUpti_ModuleResourceData module{};
    module.cubinSize = size;
    module.pCubin = cubin;
    CUpti_ResourceData data{};
    data.resourceDescriptor = &module;
    s.callback(s.userdata, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED, &data);
  }

  std::string Calls() { return Call<const char* (*)()>("fake_pc_calls")(); }

  template <typename Fn>
  Fn Call(const char* name) {
    return reinterpret_cast<Fn>(dlsym(library_handle_, name));
  }

  void* library_handle_ = nullptr;
};

TEST_F(GpuBackendPcSamplingTest, LaunchesEnableAndDrainAndStopDisables) {
  MakeSamplingState();
  ASSERT_EQ(state_->Start(), "");
  ModuleLoaded("cubin", 5);
  auto* context = reinterpret_cast<CUcontext>(0x5000);
  Launch(41, context);
  EXPECT_EQ(Calls(),
            "GetCubinCrc,Enable,GetNumStallReasons,GetStallReasons,"
            "SetConfigurationAttribute,GetData");
  EXPECT_EQ(Call<void* (*)()>("fake_pc_context")(), context);
  Call<void (*)(uint32_t, uint64_t, uint32_t)>("fake_pc_add_record")(41, 0x40, 9);
  Launch(42, context);
  state_->Stop();
  EXPECT_TRUE(Calls().ends_with("GetData,GetData,Disable")) << Calls();

  // launch context -> cuLaunchKernel -> kernel -> instruction.
  gpu::ContextId instruction = 0;
  for (size_t i = 0; i < sink_.node_count(); ++i) {
    const gpu::ContextId id = gpu::FakeContextSink::kFirstId + i;
    if (sink_.NodeOf(id).kind == gpu::GpuNodeKind::kInstruction) instruction = id;
  }
  ASSERT_NE(instruction, 0u);
  EXPECT_EQ(sink_.NodeOf(instruction).name, "pc 0x0040");
  const auto kernel = sink_.NodeOf(sink_.NodeOf(instruction).parent);
  EXPECT_EQ(kernel.kind, gpu::GpuNodeKind::kKernel);
  EXPECT_EQ(kernel.name, "sampled_kernel");
  EXPECT_EQ(sink_.NodeOf(kernel.parent).name, "cuLaunchKernel");
  const auto metadata = state_->Metadata();
  EXPECT_EQ(Value(metadata, "gpu_samples"),
            "on (kernel-serialized, every stall reason, 1 context)");
  EXPECT_EQ(Value(metadata, "gpu_samples_attributed"), "9");
  EXPECT_EQ(Value(metadata, "gpu_samples_modules"), "1");
  EXPECT_EQ(Value(metadata, "gpu_samples_instructions_with_line"), "1");
}

TEST_F(GpuBackendPcSamplingTest, WithoutTheFlagNothingIsSampled) {
  unsetenv("DEEPCONTEXT_GPU_SAMPLES");
  MakeSamplingState();
  ASSERT_EQ(state_->Start(), "");
  Launch(41, reinterpret_cast<CUcontext>(0x5000));
  state_->Stop();
  EXPECT_EQ(Calls(), "");
  EXPECT_EQ(Value(state_->Metadata(), "gpu_samples"), "");
}

}  // namespace
}  // namespace deepcontext::cupti::fake
