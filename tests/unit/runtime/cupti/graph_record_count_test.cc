#include "runtime/cupti/graph_record_count.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "runtime/gpu/gpu_attribution.h"
#include "tests/unit/runtime/gpu/fake_context_sink.h"
#include "tests/unit/runtime/cupti/fake_cuda_graph.h"

namespace deepcontext::cupti {
namespace {

// A graph as PyTorch's capture or a hand-built graph makes them: kernels,
// copies and memsets mixed with nodes that produce no activity record, and
// a child graph that itself embeds one.
class MixedGraph {
 public:
  MixedGraph() {
    inner_.Add(CU_GRAPH_NODE_TYPE_KERNEL);
    inner_.Add(CU_GRAPH_NODE_TYPE_MEMCPY);
    inner_.Add(CU_GRAPH_NODE_TYPE_EMPTY);

    child_.Add(CU_GRAPH_NODE_TYPE_KERNEL);
    child_.Add(CU_GRAPH_NODE_TYPE_KERNEL);
    child_.Add(CU_GRAPH_NODE_TYPE_MEMSET);
    child_.Add(CU_GRAPH_NODE_TYPE_GRAPH, &inner_);

    root_.Add(CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    root_.Add(CU_GRAPH_NODE_TYPE_KERNEL);
    root_.Add(CU_GRAPH_NODE_TYPE_MEMCPY);
    root_.Add(CU_GRAPH_NODE_TYPE_MEMSET);
    root_.Add(CU_GRAPH_NODE_TYPE_EMPTY);
    root_.Add(CU_GRAPH_NODE_TYPE_HOST);
    root_.Add(CU_GRAPH_NODE_TYPE_EVENT_RECORD);
    root_.Add(CU_GRAPH_NODE_TYPE_WAIT_EVENT);
    root_.Add(CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL);
    root_.Add(CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT);
    root_.Add(CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
    root_.Add(CU_GRAPH_NODE_TYPE_GRAPH, &child_);
    root_.Add(CU_GRAPH_NODE_TYPE_MEM_FREE);
  }
  CUgraph root() { return &root_; }
  CUgraph inner() { return &inner_; }

  // Root: kernel, memcpy, memset; child: 2 kernels, memset; inner: kernel,
  // memcpy.
  static constexpr uint32_t kKernels = 4, kCopies = 2, kMemsets = 2;
  static constexpr uint32_t kRecords = kKernels + kCopies + kMemsets;

 private:
  CUgraph_st root_, child_, inner_;
};

TEST(CountGraphRecordsTest, CountsKernelCopyAndMemsetNodesOfNestedGraphs) {
  MixedGraph graph;
  EXPECT_EQ(CountGraphRecords(fake_cuda::GraphFunctions(), graph.root(), TracedActivity{}),
            MixedGraph::kRecords);
  EXPECT_EQ(CountGraphRecords(fake_cuda::GraphFunctions(), graph.inner(), TracedActivity{}),
            2u);
  CUgraph_st empty;
  EXPECT_EQ(CountGraphRecords(fake_cuda::GraphFunctions(), &empty, TracedActivity{}), 0u);
}

TEST(CountGraphRecordsTest, NodesOfUntracedKindsProduceNoRecords) {
  MixedGraph graph;
  TracedActivity no_memsets;
  no_memsets.memsets = false;
  EXPECT_EQ(CountGraphRecords(fake_cuda::GraphFunctions(), graph.root(), no_memsets),
            MixedGraph::kRecords - MixedGraph::kMemsets);
  TracedActivity no_copies;
  no_copies.copies = false;
  no_copies.peer_copies = false;
  EXPECT_EQ(CountGraphRecords(fake_cuda::GraphFunctions(), graph.root(), no_copies),
            MixedGraph::kRecords - MixedGraph::kCopies);
  // Whether a copy node is peer to peer is not known: with one copy kind
  // traced the count is unknown.
  TracedActivity no_peer_copies;
  no_peer_copies.peer_copies = false;
  EXPECT_EQ(CountGraphRecords(fake_cuda::GraphFunctions(), graph.root(), no_peer_copies), 0u);
}

TEST(CountGraphRecordsTest, ConditionalAndUnknownNodesMakeTheCountUnknown) {
  MixedGraph graph;
  graph.inner()->Add(CU_GRAPH_NODE_TYPE_CONDITIONAL);
  EXPECT_EQ(CountGraphRecords(fake_cuda::GraphFunctions(), graph.root(), TracedActivity{}), 0u);

  CUgraph_st future;
  future.Add(CU_GRAPH_NODE_TYPE_KERNEL);
  future.Add(99);
  EXPECT_EQ(CountGraphRecords(fake_cuda::GraphFunctions(), &future, TracedActivity{}), 0u);
}

TEST(CountGraphRecordsTest, FailingQueriesMakeTheCountUnknown) {
  MixedGraph graph;
  EXPECT_EQ(CountGraphRecords(CudaGraphFunctions{}, graph.root(), TracedActivity{}),
            0u);
  CudaGraphFunctions partial = fake_cuda::GraphFunctions();
  partial.child_graph_node_get_graph = nullptr;
  EXPECT_EQ(CountGraphRecords(partial, graph.root(), TracedActivity{}), 0u);
  EXPECT_EQ(CountGraphRecords(fake_cuda::GraphFunctions(), nullptr, TracedActivity{}), 0u);

  graph.inner()->Add(CU_GRAPH_NODE_TYPE_KERNEL)->broken = true;
  EXPECT_EQ(CountGraphRecords(fake_cuda::GraphFunctions(), graph.root(), TracedActivity{}), 0u);

  CUgraph_st orphan_child;  // a child node without its graph
  orphan_child.Add(CU_GRAPH_NODE_TYPE_GRAPH, nullptr);
  EXPECT_EQ(CountGraphRecords(fake_cuda::GraphFunctions(), &orphan_child, TracedActivity{}),
            0u);
}

TEST(CountGraphRecordsTest, NestingIsBounded) {
  // graphs[i] holds one kernel and graphs[i + 1] as a child.
  auto chain = [](int depth) {
    std::vector<std::unique_ptr<CUgraph_st>> graphs;
    for (int i = 0; i <= depth; ++i) graphs.push_back(std::make_unique<CUgraph_st>());
    for (int i = 0; i <= depth; ++i) {
      graphs[i]->Add(CU_GRAPH_NODE_TYPE_KERNEL);
      if (i < depth) graphs[i]->Add(CU_GRAPH_NODE_TYPE_GRAPH, graphs[i + 1].get());
    }
    return graphs;
  };
  const auto shallow = chain(kMaxGraphDepth);
  EXPECT_EQ(CountGraphRecords(fake_cuda::GraphFunctions(), shallow[0].get(), TracedActivity{}),
            static_cast<uint32_t>(kMaxGraphDepth + 1));
  const auto deep = chain(kMaxGraphDepth + 1);
  EXPECT_EQ(CountGraphRecords(fake_cuda::GraphFunctions(), deep[0].get(), TracedActivity{}), 0u);
}

// The count a graph launch expects is what lets attribution release it:
// exactly when the last of its records arrived, not before and not at the
// next flush.
TEST(CountGraphRecordsTest, AttributionReleasesAGraphLaunchAtItsLastRecord) {
  MixedGraph graph;
  const uint32_t expected =
      CountGraphRecords(fake_cuda::GraphFunctions(), graph.root(), TracedActivity{});
  ASSERT_EQ(expected, 8u);

  gpu::FakeContextSink sink;
  gpu::GpuAttribution attribution(sink);
  // Captured nodes: the kernels' creation contexts are known, the copies'
  // and memsets' are not (they fall back to the launch).
  for (uint64_t node = 1; node <= MixedGraph::kKernels; ++node) {
    attribution.OnGraphNodeCreated(node, 30, "cuLaunchKernel");
  }
  for (uint64_t replay = 0; replay < 2; ++replay) {
    const uint64_t correlation = 100 + replay;
    gpu::LaunchRecord launch;
    launch.correlation_id = correlation;
    launch.context = 40;
    launch.api_name = "cuGraphLaunch";
    launch.expected_records = expected;
    attribution.OnLaunch(launch);

    uint64_t node = 0;
    auto deliver = [&](int kind) {
      ++node;
      if (kind == 0) {
        gpu::KernelRecord k;
        k.correlation_id = correlation;
        k.graph_node_id = node;
        k.name = "k" + std::to_string(node);
        k.end_ns = 10;
        attribution.OnKernel(k);
      } else if (kind == 1) {
        gpu::MemcpyRecord c;
        c.correlation_id = correlation;
        c.graph_node_id = node;
        c.kind = gpu::CopyKind::kDeviceToDevice;
        c.end_ns = 5;
        attribution.OnMemcpy(c);
      } else {
        gpu::MemsetRecord m;
        m.correlation_id = correlation;
        m.graph_node_id = node;
        m.end_ns = 3;
        attribution.OnMemset(m);
      }
    };
    for (uint32_t i = 0; i < MixedGraph::kKernels; ++i) deliver(0);
    for (uint32_t i = 0; i < MixedGraph::kCopies; ++i) deliver(1);
    deliver(2);
    EXPECT_EQ(attribution.Stats().tracked, 1u) << "one record still to come";
    deliver(2);
    EXPECT_EQ(attribution.Stats().tracked, 0u) << "released at its last record";
  }
  const gpu::AttributionStats stats = attribution.Stats();
  EXPECT_EQ(stats.records, 16u);
  EXPECT_EQ(stats.attributed, 16u);
  EXPECT_EQ(stats.via_graph_node, 8u);
  EXPECT_EQ(stats.unattributed, 0u);
  EXPECT_EQ(sink.Count(30, {"cuLaunchKernel", "k1"}, gpu::GpuMetric::kGpuTime), 2u);
  EXPECT_EQ(sink.Count(40, {"cuGraphLaunch", "memcpy DtoD"}, gpu::GpuMetric::kGpuTime),
            4u);
  EXPECT_EQ(sink.Count(40, {"cuGraphLaunch", "memset"}, gpu::GpuMetric::kGpuTime), 4u);
  attribution.Flush();
  EXPECT_EQ(attribution.Stats().unattributed, 0u);
}

}  // namespace
}  // namespace deepcontext::cupti
