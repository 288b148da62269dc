// --gpu-samples in the live backend over the fake CUPTI: the PC sampling
// entry points come from a fake library found already loaded, as the real
// ones come from the loaded libcupti; the test checks that launches enable
// and drain sampling, that stopping disables it, that module loads feed the
// source lines, and what the metadata says.
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "deepcontext/dlmonitor.h"
#include "runtime/gpu/counter_claims.h"
#include "tests/unit/runtime/cupti/fake_backend_test.h"
#include "tests/unit/runtime/cupti/fake_cuda_graph.h"
#include "tests/unit/runtime/cupti/fake_graph_calls.h"
#include "tests/unit/runtime/emit_op.h"

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
    MakeStateFrom(FakeCuptiFunctions(), 130001, DEEPCONTEXT_FAKE_PC_SAMPLING);
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

  // The context DLMonitor gives the calling thread inside the op `name`.
  static gpu::ContextId InsideOp(const char* name, uint64_t op_id) {
    testing::EmitOp(name, op_id, DLMONITOR_PHASE_ENTER);
    dlmonitor_context_t context = 0;
    EXPECT_EQ(dlmonitor_context_current(&context), DLMONITOR_OK);
    return context;
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
  ASSERT_TRUE(IsOk(state_->Start()));
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

// The device key the backend claims for contexts on device 0 (the fake
// driver's UUID, unique to this test process).
std::string Gpu0() {
  auto driver = CudaDriver::Load();
  return driver.ok() ? (*driver)->DeviceUuid(0) : "";
}

TEST_F(GpuBackendPcSamplingTest, AGpuAnotherProcessMeasuresIsLeftUnsampledAndTheStatusSaysWho) {
  gpu::CounterClaims& process = gpu::CounterClaims::ForProcess();
  const std::string key = Gpu0();
  ASSERT_EQ(key.rfind("GPU-face00", 0), 0u) << key;
  // Its own open file of the lock: to flock, another process.
  gpu::CounterClaims other(process.directory());
  auto held = other.Claim(key, "GPU hardware counters");
  ASSERT_TRUE(held.ok()) << held.status().message();
  ASSERT_EQ((*held)->uncoordinated(), "");
  MakeSamplingState();
  ASSERT_TRUE(IsOk(state_->Start()));
  Launch(41, reinterpret_cast<CUcontext>(0x5000));
  state_->Stop();
  EXPECT_EQ(Calls().find("Enable"), std::string::npos) << Calls();
  const std::string status = Value(state_->Metadata(), "gpu_samples");
  EXPECT_EQ(status.rfind("off: GPU " + key + " is in use by pid " + std::to_string(getpid()), 0),
            0u)
      << status;
  EXPECT_NE(status.find(", GPU hardware counters: one process per GPU may sample its "
                        "instructions or measure its counters at a time (lock file " +
                        process.PathFor(key) + ")"),
            std::string::npos)
      << status;
  held->reset();
  unlink(process.PathFor(key).c_str());
}

TEST_F(GpuBackendPcSamplingTest, SamplingHoldsTheGpuFromItsFirstLaunchUntilStop) {
  gpu::CounterClaims& process = gpu::CounterClaims::ForProcess();
  const std::string key = Gpu0();
  gpu::CounterClaims other(process.directory());
  MakeSamplingState();
  ASSERT_TRUE(IsOk(state_->Start()));
  EXPECT_TRUE(other.Claim(key, "GPU hardware counters").ok());  // given back at once
  Launch(41, reinterpret_cast<CUcontext>(0x5000));
  EXPECT_NE(Calls().find("Enable"), std::string::npos);
  auto refused = other.Claim(key, "GPU hardware counters");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(", GPU instruction samples: "), std::string::npos)
      << refused.status().message();
  state_->Stop();
  EXPECT_TRUE(other.Claim(key, "GPU hardware counters").ok());
  EXPECT_EQ(Value(state_->Metadata(), "gpu_samples"),
            "on (kernel-serialized, every stall reason, 1 context)");
  unlink(process.PathFor(key).c_str());
}

TEST_F(GpuBackendPcSamplingTest, WithoutTheFlagNothingIsSampled) {
  unsetenv("DEEPCONTEXT_GPU_SAMPLES");
  MakeSamplingState();
  ASSERT_TRUE(IsOk(state_->Start()));
  Launch(41, reinterpret_cast<CUcontext>(0x5000));
  state_->Stop();
  EXPECT_EQ(Calls(), "");
  EXPECT_EQ(Value(state_->Metadata(), "gpu_samples"), "");
}

TEST_F(GpuBackendPcSamplingTest, GraphKernelSamplesLandWhereTheirKernelsWereCaptured) {
  ASSERT_EQ(dlmonitor_init(), DLMONITOR_OK);
  MakeSamplingState();
  ASSERT_TRUE(IsOk(state_->Start()));
  auto* cuda_context = reinterpret_cast<CUcontext>(0x5000);
  // with torch.cuda.graph(g): y = x @ w (one op), z = y.relu() (another)
  CUgraph_st graph;
  const gpu::ContextId matmul = InsideOp("aten::mm", 1);
  FakeCapturedLaunch(1, "_Z4gemmPf", &graph);
  testing::EmitOp("aten::mm", 1, DLMONITOR_PHASE_EXIT);
  const gpu::ContextId relu = InsideOp("aten::relu", 2);
  FakeCapturedLaunch(2, "_Z4reluPf", &graph);
  // The same kernel name captured by two ops: which node ran it is unknown.
  FakeCapturedLaunch(3, "_Z3addPf", &graph);
  testing::EmitOp("aten::relu", 2, DLMONITOR_PHASE_EXIT);
  const gpu::ContextId add = InsideOp("aten::add", 3);
  FakeCapturedLaunch(4, "_Z3addPf", &graph);
  testing::EmitOp("aten::add", 3, DLMONITOR_PHASE_EXIT);
  ASSERT_NE(matmul, 0u);
  ASSERT_NE(matmul, relu);
  auto* exec = reinterpret_cast<CUgraphExec>(0x7000);
  CUpti_GraphData instantiated{};
  instantiated.graph = &graph;
  instantiated.graphExec = exec;
  FakeGraphResource(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, instantiated);
  // g.replay(): every kernel's samples carry the graph launch's id.
  const gpu::ContextId replay = InsideOp("replay", 4);
  FakeGraphLaunch(10, exec, cuda_context);
  testing::EmitOp("replay", 4, DLMONITOR_PHASE_EXIT);
  auto add_record = Call<void (*)(uint32_t, uint64_t, uint32_t, const char*)>(
      "fake_pc_add_kernel_record");
  add_record(10, 0x80, 30, "_Z4gemmPf");
  add_record(10, 0x40, 12, "_Z4reluPf");
  add_record(10, 0x10, 7, "_Z3addPf");
  state_->Stop();

  EXPECT_NE(sink_.Find(matmul, {"cuLaunchKernel", "_Z4gemmPf", "pc 0x0080"}), 0u);
  EXPECT_NE(sink_.Find(relu, {"cuLaunchKernel", "_Z4reluPf", "pc 0x0040"}), 0u);
  EXPECT_EQ(sink_.Find(replay, {"cuGraphLaunch", "_Z4gemmPf"}), 0u);
  EXPECT_EQ(sink_.Find(replay, {"cuGraphLaunch", "_Z4reluPf"}), 0u);
  EXPECT_NE(sink_.Find(replay, {"cuGraphLaunch", "_Z3addPf", "pc 0x0010"}), 0u);
  EXPECT_EQ(sink_.Find(relu, {"cuLaunchKernel", "_Z3addPf"}), 0u);
  EXPECT_EQ(sink_.Find(add, {"cuLaunchKernel", "_Z3addPf"}), 0u);
  const auto metadata = state_->Metadata();
  EXPECT_EQ(Value(metadata, "gpu_samples_attributed"), "49");
  EXPECT_EQ(Value(metadata, "gpu_samples_graph_at_capture"), "42");
  EXPECT_EQ(Value(metadata, "gpu_samples_graph_at_launch"), "7");
  state_.reset();
  EXPECT_EQ(dlmonitor_finalize(), DLMONITOR_OK);
}

}  // namespace
}  // namespace deepcontext::cupti::fake
