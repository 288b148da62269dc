#include "runtime/cupti/graph_launch_tracker.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <string>

#include "runtime/cupti/cupti_functions.h"
#include "tests/unit/runtime/cupti/fake_cuda_graph.h"

namespace deepcontext::cupti {
namespace {

// Executable graphs are opaque handles: any distinct values do.
CUgraphExec Exec(uintptr_t value) { return reinterpret_cast<CUgraphExec>(value); }

// The graph queries go through a CudaDriver loaded from the fake libcuda,
// as the backend's do through the real one.
class GraphLaunchTrackerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("DEEPCONTEXT_CUDA_DRIVER", DEEPCONTEXT_FAKE_CUDA_DRIVER, 1);
    StatusOr<std::unique_ptr<CudaDriver>> driver = CudaDriver::Load();
    unsetenv("DEEPCONTEXT_CUDA_DRIVER");
    ASSERT_TRUE(driver.ok()) << driver.status().message();
    driver_ = std::move(*driver);

    // 3 kernels, a memset, a memcpy and 2 record-less nodes; one kernel
    // and the memcpy in a child graph.
    child_.Add(CU_GRAPH_NODE_TYPE_KERNEL);
    child_.Add(CU_GRAPH_NODE_TYPE_MEMCPY);
    graph_.Add(CU_GRAPH_NODE_TYPE_KERNEL);
    graph_.Add(CU_GRAPH_NODE_TYPE_EMPTY);
    graph_.Add(CU_GRAPH_NODE_TYPE_KERNEL);
    graph_.Add(CU_GRAPH_NODE_TYPE_MEMSET);
    graph_.Add(CU_GRAPH_NODE_TYPE_EVENT_RECORD);
    graph_.Add(CU_GRAPH_NODE_TYPE_GRAPH, &child_);
  }

  // The GRAPHEXEC_CREATED / _DESTROY_STARTING callbacks as CUPTI makes them.
  bool Resource(GraphLaunchTracker& tracker, CUpti_CallbackIdResource cbid,
                CUgraphExec exec, CUgraph graph,
                const TracedActivity& traced = {}) {
    CUpti_GraphData data{};
    data.graph = graph;
    data.graphExec = exec;
    return tracker.OnResource(cbid, &data, traced);
  }
  static uint32_t Launch(const GraphLaunchTracker& tracker, CUgraphExec exec) {
    cuGraphLaunch_params params{};
    params.hGraph = exec;
    return tracker.LaunchRecords(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &params);
  }
  static uint32_t LaunchPtsz(const GraphLaunchTracker& tracker, CUgraphExec exec) {
    cuGraphLaunch_ptsz_params params{};
    params.hGraphExec = exec;
    return tracker.LaunchRecords(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
                                 &params);
  }

  std::unique_ptr<CudaDriver> driver_;
  CUgraph_st graph_, child_;
};

TEST_F(GraphLaunchTrackerTest, LaunchesExpectTheNodeCountTakenAtInstantiation) {
  EXPECT_EQ(driver_->GraphRecords(&graph_, TracedActivity{}), 5u);
  GraphLaunchTracker tracker(*driver_);
  EXPECT_EQ(Launch(tracker, Exec(0x1000)), 0u);  // not instantiated yet
  EXPECT_TRUE(Resource(tracker, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED,
                       Exec(0x1000), &graph_));
  EXPECT_EQ(Launch(tracker, Exec(0x1000)), 5u);
  EXPECT_EQ(LaunchPtsz(tracker, Exec(0x1000)), 5u);
  EXPECT_EQ(Launch(tracker, Exec(0x2000)), 0u);

  // The executable graph keeps its nodes when its source graph changes.
  graph_.Add(CU_GRAPH_NODE_TYPE_KERNEL);
  EXPECT_EQ(Launch(tracker, Exec(0x1000)), 5u);
  // Instantiated again, the new executable has the new count.
  Resource(tracker, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, Exec(0x2000), &graph_);
  EXPECT_EQ(Launch(tracker, Exec(0x2000)), 6u);

  EXPECT_TRUE(Resource(tracker, CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING,
                       Exec(0x1000), nullptr));
  EXPECT_EQ(Launch(tracker, Exec(0x1000)), 0u);
  EXPECT_EQ(Launch(tracker, Exec(0x2000)), 6u);
  EXPECT_EQ(tracker.size(), 1u);
}

TEST_F(GraphLaunchTrackerTest, TracedKindsAndUnknownGraphsDecideTheCount) {
  GraphLaunchTracker tracker(*driver_);
  TracedActivity no_memsets;
  no_memsets.memsets = false;
  Resource(tracker, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, Exec(0x10), &graph_,
           no_memsets);
  EXPECT_EQ(Launch(tracker, Exec(0x10)), 4u);

  // Re-instantiation at the same address with a graph whose count is
  // unknown forgets the old count.
  child_.Add(CU_GRAPH_NODE_TYPE_CONDITIONAL);
  Resource(tracker, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, Exec(0x10), &graph_);
  EXPECT_EQ(Launch(tracker, Exec(0x10)), 0u);
  Resource(tracker, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, Exec(0x20), nullptr);
  EXPECT_EQ(Launch(tracker, Exec(0x20)), 0u);
  EXPECT_EQ(tracker.size(), 0u);
}

TEST_F(GraphLaunchTrackerTest, DisablingANodeMakesTheCountUnknown) {
  GraphLaunchTracker tracker(*driver_);
  Resource(tracker, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, Exec(0x10), &graph_);
  cuGraphNodeSetEnabled_params params{};
  params.hGraphExec = Exec(0x10);
  params.hNode = graph_.nodes[0].get();
  params.isEnabled = 1;
  tracker.OnNodeSetEnabled(CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled, &params);
  EXPECT_EQ(Launch(tracker, Exec(0x10)), 5u);
  params.isEnabled = 0;
  tracker.OnNodeSetEnabled(CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled, &params);
  EXPECT_EQ(Launch(tracker, Exec(0x10)), 0u);
}

TEST_F(GraphLaunchTrackerTest, OtherCallbacksAreLeftAlone) {
  GraphLaunchTracker tracker(*driver_);
  EXPECT_FALSE(Resource(tracker, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                        Exec(0x10), &graph_));
  EXPECT_FALSE(Resource(tracker, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATE_STARTING,
                        Exec(0x10), &graph_));
  EXPECT_TRUE(tracker.OnResource(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, nullptr,
                                 TracedActivity{}));
  EXPECT_EQ(tracker.size(), 0u);
  Resource(tracker, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, Exec(0x10), &graph_);
  // Launch variants whose parameters are not known, and missing parameters.
  cuGraphLaunch_params params{};
  params.hGraph = Exec(0x10);
  EXPECT_EQ(tracker.LaunchRecords(CUPTI_DRIVER_TRACE_CBID_cuGraphUpload, &params),
            0u);
  EXPECT_EQ(tracker.LaunchRecords(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, nullptr),
            0u);
  tracker.OnNodeSetEnabled(CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled, nullptr);
  EXPECT_EQ(Launch(tracker, Exec(0x10)), 5u);
}

TEST_F(GraphLaunchTrackerTest, RemembersABoundedNumberOfGraphs) {
  GraphLaunchTracker tracker(*driver_, /*max_graphs=*/2);
  for (uintptr_t exec = 1; exec <= 3; ++exec) {
    Resource(tracker, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, Exec(exec), &graph_);
  }
  EXPECT_EQ(tracker.size(), 2u);
  EXPECT_EQ(Launch(tracker, Exec(1)), 0u);  // the oldest went
  EXPECT_EQ(Launch(tracker, Exec(2)), 5u);
  EXPECT_EQ(Launch(tracker, Exec(3)), 5u);
  // Re-instantiating a remembered handle replaces it without evicting.
  Resource(tracker, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, Exec(2), &child_);
  EXPECT_EQ(Launch(tracker, Exec(2)), 2u);
  EXPECT_EQ(Launch(tracker, Exec(3)), 5u);
}

}  // namespace
}  // namespace deepcontext::cupti
