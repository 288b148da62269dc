// The backend links the nodes inside an executable graph's child graphs
// (graph_child_nodes.h) when the graph is instantiated: a kernel captured
// inside an op, embedded as a child graph (as XLA embeds a traced cuBLAS
// GEMM in its command buffer), lands under that op when the graph is
// replayed, although CUPTI never announced its node in the executable.
#include <cuda.h>

#include <string>

#include "deepcontext/dlmonitor.h"
#include "tests/unit/runtime/cupti/fake_backend_test.h"
#include "tests/unit/runtime/cupti/fake_cuda_graph.h"
#include "tests/unit/runtime/cupti/fake_graph_calls.h"
#include "tests/unit/runtime/emit_op.h"

namespace deepcontext::cupti::fake {
namespace {

constexpr uint32_t kExecId = 7;

CUptiResult CUPTIAPI GetGraphExecId(CUgraphExec, uint32_t* id) {
  *id = kExecId;
  return CUPTI_SUCCESS;
}

// The fake CUPTI's node ids are the nodes' addresses: an executable graph's
// nodes, which are never dereferenced, are made from the ids they must have.
CUgraphNode ExecNode(uint64_t index) {
  return reinterpret_cast<CUgraphNode>((uint64_t{kExecId} << 32) | index);
}

class GpuBackendChildGraphTest : public FakeBackendTest {
 protected:
  void MakeState(bool with_exec_id) {
    CuptiFunctions functions = FakeCuptiFunctions();
    if (with_exec_id) functions.get_graph_exec_id = &GetGraphExecId;
    MakeStateFrom(functions, 130001, "fake-cupti");
  }

  static void Cloned(CUgraphNode clone, CUgraphNode original) {
    CUpti_GraphData cloned{};
    cloned.node = clone;
    cloned.originalNode = original;
    FakeGraphResource(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, cloned);
  }

  static gpu::ContextId InsideOp(const char* name, uint64_t op_id) {
    testing::EmitOp(name, op_id, DLMONITOR_PHASE_ENTER);
    dlmonitor_context_t context = 0;
    EXPECT_EQ(dlmonitor_context_current(&context), DLMONITOR_OK);
    return context;
  }

  // Records a command buffer as XLA does: a kernel of its own, then a GEMM
  // traced inside op "matmul" and embedded as a child graph (its node
  // cloned into the child graph); instantiates it with the top-level clones
  // `announced` (the executable's node indices), replays it and returns
  // where the GEMM's record went.
  gpu::ContextId Replay(std::vector<uint64_t> announced, std::string* metadata) {
    gpu::ContextId matmul = 0;
    {
      matmul = InsideOp("matmul", 1);
      CUgraph_st traced;
      const CUgraphNode captured = FakeCapturedLaunch(1, "_Z4gemmPf", &traced);
      testing::EmitOp("matmul", 1, DLMONITOR_PHASE_EXIT);
      CUgraph_st embedded;
      CUgraph_st command_buffer;
      command_buffer.Add(CU_GRAPH_NODE_TYPE_KERNEL);
      command_buffer.Add(CU_GRAPH_NODE_TYPE_GRAPH, &embedded);
      Cloned(embedded.Add(CU_GRAPH_NODE_TYPE_KERNEL), captured);  // cuGraphAddChildGraphNode
      for (uint64_t index : announced) Cloned(ExecNode(index), command_buffer.nodes[0].get());
      auto* exec = reinterpret_cast<CUgraphExec>(0x7000);
      CUpti_GraphData instantiated{};
      instantiated.graph = &command_buffer;
      instantiated.graphExec = exec;
      FakeGraphResource(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, instantiated);
      InsideOp("step", 2);
      FakeGraphLaunch(10, exec);
      testing::EmitOp("step", 2, DLMONITOR_PHASE_EXIT);
    }
    // The GEMM runs as the executable's node 2: after the two top-level ones.
    FakeCuptiKernelRecord(10, 1'000, 5'000, false, (uint64_t{kExecId} << 32) | 2);
    state_->Stop();
    *metadata = Value(state_->Metadata(), "gpu_graph_child_nodes_linked");
    return sink_.Find(matmul, {"cuLaunchKernel", "fake_kernel"});
  }
};

TEST_F(GpuBackendChildGraphTest, AChildGraphsKernelLandsUnderTheOpThatCapturedIt) {
  ASSERT_EQ(dlmonitor_init(), DLMONITOR_OK);
  MakeState(/*with_exec_id=*/true);
  ASSERT_TRUE(IsOk(state_->Start()));
  std::string linked;
  const gpu::ContextId gemm = Replay({0, 1}, &linked);
  ASSERT_NE(gemm, 0u);
  EXPECT_EQ(sink_.Get(gemm, gpu::GpuMetric::kGpuTime).sum, 4'000);
  EXPECT_EQ(linked, "1");
  state_.reset();
  EXPECT_EQ(dlmonitor_finalize(), DLMONITOR_OK);
}

TEST_F(GpuBackendChildGraphTest, AnUnconfirmedNumberingLinksNothing) {
  ASSERT_EQ(dlmonitor_init(), DLMONITOR_OK);
  MakeState(/*with_exec_id=*/true);
  ASSERT_TRUE(IsOk(state_->Start()));
  std::string linked;
  // The driver announced the top level as nodes 5 and 6: not as measured.
  EXPECT_EQ(Replay({5, 6}, &linked), 0u);
  EXPECT_EQ(linked, "");
  EXPECT_EQ(Total("gpu_time").sum, 4'000);  // under the launch instead
  state_.reset();
  EXPECT_EQ(dlmonitor_finalize(), DLMONITOR_OK);
}

TEST_F(GpuBackendChildGraphTest, WithoutCuptiGetGraphExecIdNothingIsLinked) {
  ASSERT_EQ(dlmonitor_init(), DLMONITOR_OK);
  MakeState(/*with_exec_id=*/false);
  ASSERT_TRUE(IsOk(state_->Start()));
  std::string linked;
  EXPECT_EQ(Replay({0, 1}, &linked), 0u);
  EXPECT_EQ(linked, "");
  state_.reset();
  EXPECT_EQ(dlmonitor_finalize(), DLMONITOR_OK);
}

}  // namespace
}  // namespace deepcontext::cupti::fake
