// An XLA command buffer through the backend over the fake CUPTI: recorded
// inside XLA's ranges by a program's first call of a jitted function, then
// launched by later calls from another line. The replays' kernels land
// under the launching call, below the HLO operation that recorded them; a
// graph captured outside XLA's ranges (PyTorch's) stays under the code
// that captured it.
#include <cuda.h>

#include <string>
#include <vector>

#include "deepcontext/dlmonitor.h"
#include "tests/unit/runtime/cupti/fake_backend_test.h"
#include "tests/unit/runtime/cupti/fake_cuda_graph.h"
#include "tests/unit/runtime/cupti/fake_graph_calls.h"
#include "tests/unit/runtime/cupti/fake_nvtx_calls.h"
#include "tests/unit/runtime/emit_op.h"

namespace deepcontext::cupti::fake {
namespace {

const std::vector<std::string> kGemm = {"[backward]", "layer2", "dot_general",
                                        "gemm_fusion_dot.6", "cuLaunchKernel", "fake_kernel"};

class GpuBackendCommandBufferTest : public FakeBackendTest {
 protected:
  // Instantiation: `exec_node` is the executable's clone of `node`.
  static CUgraphExec Instantiate(CUgraph graph, CUgraphNode node, CUgraphNode exec_node,
                                 uintptr_t exec_handle) {
    CUpti_GraphData cloned{};
    cloned.node = exec_node;
    cloned.originalNode = node;
    FakeGraphResource(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, cloned);
    auto* exec = reinterpret_cast<CUgraphExec>(exec_handle);
    CUpti_GraphData instantiated{};
    instantiated.graph = graph;
    instantiated.graphExec = exec;
    FakeGraphResource(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, instantiated);
    return exec;
  }

  // A Python call, standing in for the line that calls the jitted function.
  static gpu::ContextId EnterCall(const char* name, uint64_t op_id) {
    testing::EmitOp(name, op_id, DLMONITOR_PHASE_ENTER);
    dlmonitor_context_t context = 0;
    EXPECT_EQ(dlmonitor_context_current(&context), DLMONITOR_OK);
    return context;
  }

  // XLA's ranges through CUPTI's NVTX callbacks.
  void CreateTsl() { tsl_ = FakeNvtxCreateDomain("TSL", 0x5000); }
  void Push(const char* text) { FakeNvtxPush(tsl_, NvtxAscii(text)); }
  void Pop() { FakeNvtxPop(tsl_); }

  // A run of the jitted step that launches the command buffer.
  void LaunchCommandBuffer(uint32_t correlation_id, CUgraphExec exec) {
    Push("XlaModule:#hlo_module=jit_step,program_id=5#");
    Push("Thunk:#hlo_op=command_buffer_1#");
    FakeGraphLaunch(correlation_id, exec);
    Pop();
    Pop();
  }

  nvtxDomainHandle_t tsl_ = nullptr;
};

TEST_F(GpuBackendCommandBufferTest, ReplaysLandUnderTheCallThatLaunchedThem) {
  ASSERT_EQ(dlmonitor_init(), DLMONITOR_OK);
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  CreateTsl();
  constexpr uint64_t kExecNode = 0x9000;
  // The first call compiles, records the command buffer and launches it.
  const gpu::ContextId warm_up = EnterCall("warm_up_line", 1);
  CUgraph_st command_buffer;
  Push("XlaModule:#hlo_module=jit_step,program_id=5#");
  Push("Thunk:#name=jit(step)/transpose(jvp(layer2))/dot_general,hlo_op=gemm_fusion_dot.6#");
  const CUgraphNode node = FakeCapturedLaunch(1, "_Z4gemmPf", &command_buffer);
  Pop();
  Pop();
  const CUgraphExec exec = Instantiate(&command_buffer, node,
                                       reinterpret_cast<CUgraphNode>(kExecNode), 0x7000);
  LaunchCommandBuffer(10, exec);
  testing::EmitOp("warm_up_line", 1, DLMONITOR_PHASE_EXIT);
  // Two steps of the training loop, from another line.
  const gpu::ContextId loop = EnterCall("loop_line", 2);
  LaunchCommandBuffer(20, exec);
  LaunchCommandBuffer(30, exec);
  testing::EmitOp("loop_line", 2, DLMONITOR_PHASE_EXIT);
  FakeCuptiKernelRecord(10, 1'000, 2'000, false, kExecNode);
  FakeCuptiKernelRecord(20, 3'000, 6'000, false, kExecNode);
  FakeCuptiKernelRecord(30, 7'000, 11'000, false, kExecNode);
  state_->Stop();

  ASSERT_NE(warm_up, loop);
  EXPECT_EQ(sink_.Sum(warm_up, kGemm, gpu::GpuMetric::kGpuTime), 1'000);
  EXPECT_EQ(sink_.Sum(loop, kGemm, gpu::GpuMetric::kGpuTime), 7'000);
  EXPECT_EQ(sink_.Count(loop, kGemm, gpu::GpuMetric::kGpuTime), 2u);
  EXPECT_EQ(Total("gpu_time").sum, 8'000);
  EXPECT_EQ(Value(state_->Metadata(), "gpu_xla_replayed_records_moved"), "2");
  state_.reset();
  EXPECT_EQ(dlmonitor_finalize(), DLMONITOR_OK);
}

TEST_F(GpuBackendCommandBufferTest, AGraphCapturedOutsideXlaStaysWithItsCapture) {
  ASSERT_EQ(dlmonitor_init(), DLMONITOR_OK);
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  CreateTsl();
  constexpr uint64_t kExecNode = 0x9100;
  // Captured by an op of another framework (torch.cuda.graph), outside
  // XLA's ranges, in a process that also runs JAX.
  const gpu::ContextId capture = EnterCall("capture", 1);
  CUgraph_st graph;
  const CUgraphNode node = FakeCapturedLaunch(1, "_Z4gemmPf", &graph);
  testing::EmitOp("capture", 1, DLMONITOR_PHASE_EXIT);
  const CUgraphExec exec =
      Instantiate(&graph, node, reinterpret_cast<CUgraphNode>(kExecNode), 0x7100);
  // Replayed from elsewhere, once plainly and once inside an XLA thunk.
  const gpu::ContextId replay = EnterCall("replay", 2);
  FakeGraphLaunch(20, exec);
  LaunchCommandBuffer(30, exec);
  testing::EmitOp("replay", 2, DLMONITOR_PHASE_EXIT);
  FakeCuptiKernelRecord(20, 1'000, 3'000, false, kExecNode);
  FakeCuptiKernelRecord(30, 4'000, 5'000, false, kExecNode);
  state_->Stop();
  EXPECT_EQ(sink_.Sum(capture, {"cuLaunchKernel", "fake_kernel"}, gpu::GpuMetric::kGpuTime),
            3'000);
  EXPECT_EQ(sink_.Find(replay, {"cuLaunchKernel"}), 0u);
  EXPECT_EQ(Value(state_->Metadata(), "gpu_xla_replayed_records_moved"), "");
  state_.reset();
  EXPECT_EQ(dlmonitor_finalize(), DLMONITOR_OK);
}

}  // namespace
}  // namespace deepcontext::cupti::fake
