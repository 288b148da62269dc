// The backend's NVTX callbacks (runtime/cupti/nvtx_callbacks.cc) over the
// fake CUPTI: XLA's ranges as CUPTI hands them over place a launch's
// kernel below its HLO operation.

#include <string>
#include <vector>

#include "runtime/cupti/nvtx_injection.h"
#include "tests/unit/runtime/cupti/fake_backend_test.h"
#include "tests/unit/runtime/cupti/fake_nvtx_calls.h"

namespace deepcontext::cupti::fake {
namespace {

class NvtxCallbacksTest : public FakeBackendTest {
 protected:
  // The names from the test-owned context down to the node `name`.
  std::vector<std::string> PathTo(const std::string& name) const {
    for (size_t i = 0; i < sink_.node_count(); ++i) {
      gpu::ContextId id = gpu::FakeContextSink::kFirstId + i;
      if (sink_.NodeOf(id).name != name) continue;
      std::vector<std::string> names;
      while (id >= gpu::FakeContextSink::kFirstId) {
        names.insert(names.begin(), sink_.NodeOf(id).name);
        id = sink_.NodeOf(id).parent;
      }
      return names;
    }
    return {};
  }
};

TEST_F(NvtxCallbacksTest, StartEnablesTheRangeCallbacksAndStopTurnsThemOff) {
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  for (CUpti_CallbackId cbid :
       {CUPTI_CBID_NVTX_nvtxDomainCreateA, CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
        CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangePop}) {
    EXPECT_EQ(FakeCupti().nvtx_callbacks.count(cbid), 1u) << cbid;
  }
  state_->Stop();
  EXPECT_TRUE(FakeCupti().nvtx_callbacks.empty());
}

TEST_F(NvtxCallbacksTest, ALaunchInsideAnXlaThunkRangeGoesBelowItsOperation) {
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  nvtxDomainHandle_t tsl = FakeNvtxCreateDomain("TSL", 0x5000);
  nvtxDomainHandle_t other = FakeNvtxCreateDomain("NCCL", 0x6000);
  nvtxStringHandle_t thunk = FakeNvtxRegister(
      tsl,
      "Thunk:#name=jit(step)/transpose(jvp(layer2))/dot_general,hlo_op=gemm_fusion_dot.6,"
      "unique_hlo_op_id=8589934600#",
      0x7000);
  FakeNvtxPush(tsl, NvtxAscii("XlaModule:#hlo_module=jit_step,program_id=12#"));
  FakeNvtxPush(tsl, NvtxRegistered(thunk));
  FakeNvtxPush(other, NvtxAscii("Thunk:#hlo_op=not_this#"));  // another domain: ignored
  FakeCuptiLaunch(42);
  FakeNvtxPop(other);
  FakeNvtxPop(tsl);
  FakeCuptiLaunch(43);  // between instructions: no operation
  FakeNvtxPop(tsl);
  FakeCuptiKernelRecord(42, 1'000, 6'000);
  FakeCuptiKernelRecord(43, 7'000, 8'000);
  state_->Flush();
  EXPECT_EQ(Total("gpu_time").sum, 6'000);
  const std::vector<std::string> path = PathTo("gemm_fusion_dot.6");
  ASSERT_EQ(path.size(), 4u);
  EXPECT_EQ(path, (std::vector<std::string>{"[backward]", "layer2", "dot_general",
                                            "gemm_fusion_dot.6"}));
  EXPECT_TRUE(PathTo("not_this").empty());
  state_->Stop();
  EXPECT_EQ(Value(state_->Metadata(), "gpu_xla_op_ranges"), "1");
}

TEST_F(NvtxCallbacksTest, WithoutRangesLaunchesStayWhereTheyWere) {
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  FakeCuptiLaunch(7);
  FakeCuptiKernelRecord(7, 1'000, 2'000);
  state_->Flush();
  EXPECT_EQ(Total("gpu_time").sum, 1'000);
  EXPECT_TRUE(PathTo("[backward]").empty());
  EXPECT_TRUE(PathTo("[forward]").empty());
  state_->Stop();
  EXPECT_EQ(Value(state_->Metadata(), "gpu_xla_op_ranges"), "");
}

// The runtime as the NVTX tool: NVTX hands InitializeInjectionNvtx2 its
// function table, the tool fills the slots it implements.
class FakeNvtx {
 public:
  FakeNvtx() {
    for (unsigned i = 0; i < NVTX_CBID_CORE2_SIZE; ++i) pointers_[i] = &slots_[i];
    pointers_[0] = nullptr;
  }
  static const void* NVTX_API ExportTable(uint32_t id) {
    static const NvtxExportTableCallbacks callbacks{sizeof(NvtxExportTableCallbacks),
                                                    &ModuleTable};
    return id == NVTX_ETID_CALLBACKS ? &callbacks : nullptr;
  }
  template <typename F>
  F Slot(unsigned id) const {
    return reinterpret_cast<F>(slots_[id]);
  }

 private:
  static int NVTX_API ModuleTable(NvtxCallbackModule module, NvtxFunctionTable* table,
                                  unsigned int* last) {
    if (module != NVTX_CB_MODULE_CORE2) return 0;
    *table = current_->pointers_;
    *last = NVTX_CBID_CORE2_SIZE - 1;
    return 1;
  }
  friend class NvtxToolTest;
  static inline FakeNvtx* current_ = nullptr;
  NvtxFunctionPointer slots_[NVTX_CBID_CORE2_SIZE] = {};
  NvtxFunctionPointer* pointers_[NVTX_CBID_CORE2_SIZE] = {};
};

class NvtxToolTest : public NvtxCallbacksTest {
 protected:
  void SetUp() override {
    NvtxCallbacksTest::SetUp();
    FakeNvtx::current_ = &nvtx_;
    ASSERT_EQ(InstallNvtxTool(&FakeNvtx::ExportTable), 1);
  }
  nvtxDomainHandle_t ToolDomain(const char* name) {
    return nvtx_.Slot<nvtxDomainCreateA_impl_fntype>(NVTX_CBID_CORE2_DomainCreateA)(name);
  }
  nvtxStringHandle_t ToolRegister(nvtxDomainHandle_t domain, const char* text) {
    return nvtx_.Slot<nvtxDomainRegisterStringA_impl_fntype>(
        NVTX_CBID_CORE2_DomainRegisterStringA)(domain, text);
  }
  void ToolPush(nvtxDomainHandle_t domain, const nvtxEventAttributes_t& attributes) {
    nvtx_.Slot<nvtxDomainRangePushEx_impl_fntype>(NVTX_CBID_CORE2_DomainRangePushEx)(domain,
                                                                                   &attributes);
  }
  void ToolPop(nvtxDomainHandle_t domain) {
    nvtx_.Slot<nvtxDomainRangePop_impl_fntype>(NVTX_CBID_CORE2_DomainRangePop)(domain);
  }
  FakeNvtx nvtx_;
};

TEST_F(NvtxToolTest, TheToolFillsOnlyTheFunctionsXlaUses) {
  EXPECT_TRUE(NvtxToolInjected());
  EXPECT_NE(nvtx_.Slot<void*>(NVTX_CBID_CORE2_DomainRangePushEx), nullptr);
  EXPECT_EQ(nvtx_.Slot<void*>(NVTX_CBID_CORE2_DomainMarkEx), nullptr);
  EXPECT_EQ(nvtx_.Slot<void*>(NVTX_CBID_CORE2_DomainRangeStartEx), nullptr);
  // Not NVTX's callbacks table: nothing installed.
  EXPECT_EQ(InstallNvtxTool([](uint32_t) -> const void* { return nullptr; }), 0);
}

TEST_F(NvtxToolTest, ALaunchInsideAThunkRangeGoesBelowItsOperation) {
  // Strings are registered before the profile starts (JAX loads its
  // modules first): they still name their ranges.
  nvtxDomainHandle_t tsl = ToolDomain("TSL");
  nvtxDomainHandle_t other = ToolDomain("NCCL");
  nvtxStringHandle_t thunk = ToolRegister(
      tsl, "Thunk:#name=jit(step)/transpose(jvp(layer2))/dot_general,hlo_op=gemm_fusion_dot.6#");
  ASSERT_NE(thunk, nullptr);
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  ToolPush(tsl, NvtxAscii("XlaModule:#hlo_module=jit_step,program_id=12#"));
  ToolPush(tsl, NvtxRegistered(thunk));
  ToolPush(other, NvtxAscii("Thunk:#hlo_op=not_this#"));  // another domain: ignored
  FakeCuptiLaunch(42);
  ToolPop(other);
  ToolPop(tsl);
  FakeCuptiLaunch(43);
  ToolPop(tsl);
  FakeCuptiKernelRecord(42, 1'000, 6'000);
  FakeCuptiKernelRecord(43, 7'000, 8'000);
  state_->Flush();
  EXPECT_EQ(PathTo("gemm_fusion_dot.6"),
            (std::vector<std::string>{"[backward]", "layer2", "dot_general", "gemm_fusion_dot.6"}));
  EXPECT_TRUE(PathTo("not_this").empty());
  state_->Stop();
  const auto metadata = state_->Metadata();
  EXPECT_EQ(Value(metadata, "gpu_xla_op_ranges"), "1");
  EXPECT_EQ(Value(metadata, "gpu_xla_ranges_from"), "runtime NVTX tool");
  // Stopped: ranges go nowhere.
  ToolPush(tsl, NvtxRegistered(thunk));
  ToolPop(tsl);
}

}  // namespace
}  // namespace deepcontext::cupti::fake
