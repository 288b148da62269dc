#include "runtime/cupti/graph_child_nodes.h"

#include <gtest/gtest.h>

#include <unordered_map>
#include <vector>

#include "tests/unit/runtime/cupti/fake_cuda_graph.h"

namespace deepcontext::cupti {
namespace {

// A command buffer as XLA records it: kernels added one by one, and traced
// commands (a cuBLAS GEMM, with a memset first) as child graph nodes.
class CommandBuffer {
 public:
  CommandBuffer() {
    Node(root_, CU_GRAPH_NODE_TYPE_KERNEL, 100);
    Node(root_, CU_GRAPH_NODE_TYPE_GRAPH, 101, &traced_a_);
    Node(root_, CU_GRAPH_NODE_TYPE_KERNEL, 102);
    Node(root_, CU_GRAPH_NODE_TYPE_GRAPH, 103, &traced_b_);
    Node(traced_a_, CU_GRAPH_NODE_TYPE_MEMSET, 200);
    Node(traced_a_, CU_GRAPH_NODE_TYPE_KERNEL, 201);
    Node(traced_b_, CU_GRAPH_NODE_TYPE_KERNEL, 300);
  }
  CUgraph root() { return &root_; }
  CUgraph traced_b() { return &traced_b_; }
  GraphNodeIdOf ids() const {
    return [this](CUgraphNode node, uint64_t* id) {
      auto it = ids_.find(node);
      if (it == ids_.end()) return false;
      *id = it->second;
      return true;
    };
  }
  CUgraphNode Node(CUgraph_st& graph, int type, uint64_t id, CUgraph child = nullptr) {
    const CUgraphNode node = graph.Add(type, child);
    ids_[node] = id;
    return node;
  }
  void ForgetId(CUgraphNode node) { ids_.erase(node); }

 private:
  CUgraph_st root_, traced_a_, traced_b_;
  std::unordered_map<CUgraphNode, uint64_t> ids_;
};

constexpr uint32_t kExec = 156;
constexpr uint64_t kBase = uint64_t{kExec} << 32;
// CommandBuffer's four top-level nodes, announced as clones 0-3.
constexpr AnnouncedClones::Range kTopLevel{4, 3};

TEST(GraphChildNodesTest, InnerNodesAreNumberedAfterTheTopLevelOnes) {
  CommandBuffer buffer;
  const auto links = LinkChildGraphNodes(fake_cuda::GraphFunctions(), buffer.ids(), buffer.root(), kExec, kTopLevel);
  // Four top-level nodes (0-3), then the child graphs' nodes in order.
  ASSERT_EQ(links.size(), 3u);
  EXPECT_EQ(links[0].exec_node, kBase | 4);
  EXPECT_EQ(links[0].source_node, 200u);
  EXPECT_EQ(links[0].child_graph_node, 101u);
  EXPECT_EQ(links[1].exec_node, kBase | 5);
  EXPECT_EQ(links[1].source_node, 201u);
  EXPECT_EQ(links[1].child_graph_node, 101u);
  EXPECT_EQ(links[2].exec_node, kBase | 6);
  EXPECT_EQ(links[2].source_node, 300u);
  EXPECT_EQ(links[2].child_graph_node, 103u);
}

TEST(GraphChildNodesTest, AGraphWithoutChildGraphsHasNoLinks) {
  CUgraph_st graph;
  graph.Add(CU_GRAPH_NODE_TYPE_KERNEL);
  graph.Add(CU_GRAPH_NODE_TYPE_MEMSET);
  EXPECT_TRUE(LinkChildGraphNodes(fake_cuda::GraphFunctions(), [](CUgraphNode, uint64_t* id) {
                *id = 1;
                return true;
              }, &graph, kExec, {2, 1}).empty());
}

TEST(GraphChildNodesTest, ANumberingOtherThanTheMeasuredOneIsNotTrusted) {
  CommandBuffer buffer;
  // Top-level clones missing, or numbered beyond the top level: the
  // driver numbers the nodes in some other way.
  EXPECT_TRUE(
      LinkChildGraphNodes(fake_cuda::GraphFunctions(), buffer.ids(), buffer.root(), kExec, {}).empty());
  EXPECT_TRUE(
      LinkChildGraphNodes(fake_cuda::GraphFunctions(), buffer.ids(), buffer.root(), kExec, {3, 3}).empty());
  EXPECT_TRUE(
      LinkChildGraphNodes(fake_cuda::GraphFunctions(), buffer.ids(), buffer.root(), kExec, {4, 7}).empty());
}

TEST(GraphChildNodesTest, AnnouncedClonesAreCountedPerGraphAndTakenOnce) {
  AnnouncedClones clones;
  for (uint64_t i = 0; i < 4; ++i) clones.Add(kBase | i);
  clones.Add((uint64_t{157} << 32) | 0);  // a child graph cloned meanwhile
  clones.Add((uint64_t{157} << 32) | 1);
  const AnnouncedClones::Range range = clones.Take(kExec);
  EXPECT_EQ(range.count, 4u);
  EXPECT_EQ(range.highest, 3u);
  EXPECT_EQ(clones.Take(157).count, 0u);  // forgotten by the first Take
  // An instantiation of many child graphs: a new graph id for each one's
  // copy, the executable graph's clones in between. Beyond its capacity
  // the graph least recently cloned into goes, not the executable one.
  for (uint64_t i = 0; i < 100; ++i) {
    clones.Add(kBase | i);
    clones.Add((uint64_t{1000} + i) << 32);
  }
  const AnnouncedClones::Range instantiated = clones.Take(kExec);
  EXPECT_EQ(instantiated.count, 100u);
  EXPECT_EQ(instantiated.highest, 99u);
  for (uint64_t graph = 1; graph <= 100; ++graph) clones.Add(graph << 32);
  EXPECT_EQ(clones.Take(1).count, 0u);  // dropped
  for (uint64_t graph = 1; graph <= 100; ++graph) clones.Add(graph << 32);
  EXPECT_EQ(clones.Take(100).count, 1u);
}

TEST(GraphChildNodesTest, DeeperNestingIsLeftUnlinked) {
  // Its numbering was never measured: no link rather than a wrong one.
  CommandBuffer buffer;
  CUgraph_st deeper;
  buffer.Node(deeper, CU_GRAPH_NODE_TYPE_KERNEL, 400);
  buffer.Node(*buffer.traced_b(), CU_GRAPH_NODE_TYPE_GRAPH, 301, &deeper);
  EXPECT_TRUE(LinkChildGraphNodes(fake_cuda::GraphFunctions(), buffer.ids(), buffer.root(), kExec, kTopLevel).empty());
}

TEST(GraphChildNodesTest, FailingQueriesGiveNoLinks) {
  CommandBuffer buffer;
  // A node without a CUPTI id.
  buffer.ForgetId(buffer.traced_b()->nodes[0].get());
  EXPECT_TRUE(LinkChildGraphNodes(fake_cuda::GraphFunctions(), buffer.ids(), buffer.root(), kExec, kTopLevel).empty());

  CommandBuffer broken;
  broken.traced_b()->nodes[0]->broken = true;  // cuGraphNodeGetType fails
  EXPECT_TRUE(LinkChildGraphNodes(fake_cuda::GraphFunctions(), broken.ids(), broken.root(), kExec, kTopLevel).empty());

  CommandBuffer fine;
  CudaGraphFunctions missing = fake_cuda::GraphFunctions();
  missing.child_graph_node_get_graph = nullptr;  // an old driver
  EXPECT_TRUE(LinkChildGraphNodes(missing, fine.ids(), fine.root(), kExec, kTopLevel).empty());
  EXPECT_TRUE(LinkChildGraphNodes(fake_cuda::GraphFunctions(), fine.ids(), fine.root(), 0, kTopLevel).empty());
  EXPECT_TRUE(LinkChildGraphNodes(fake_cuda::GraphFunctions(), GraphNodeIdOf(), fine.root(), kExec, kTopLevel).empty());
}

}  // namespace
}  // namespace deepcontext::cupti
