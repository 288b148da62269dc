// Where each graph's kernels were captured, for the samples of graph
// launches: names captured at one site, at several, snapshots at
// instantiation, clones, destruction and the bound.
#include "runtime/cupti/graph_kernel_sites.h"

#include <gtest/gtest.h>

namespace deepcontext::cupti {
namespace {

constexpr uint64_t kGraph = 0x100;
constexpr uint64_t kExec = 0x200;
constexpr gpu::ContextId kLineA = 5;
constexpr gpu::ContextId kLineB = 6;

TEST(GraphKernelSites, AnExecutableGraphKnowsWhereItsKernelsWereCaptured) {
  GraphKernelSites sites;
  sites.OnKernelCaptured(kGraph, "_Z4gemmv", kLineA, "cuLaunchKernel");
  sites.OnKernelCaptured(kGraph, "_Z4reluv", kLineB, "cuLaunchKernel_ptsz");
  EXPECT_EQ(sites.ForLaunch(kExec), nullptr);  // not instantiated yet
  sites.OnExecCreated(kExec, kGraph);
  const auto table = sites.ForLaunch(kExec);
  ASSERT_NE(table, nullptr);
  const CaptureSite* gemm = UniqueSite(*table, "_Z4gemmv");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->context, kLineA);
  EXPECT_EQ(gemm->api, "cuLaunchKernel");
  const CaptureSite* relu = UniqueSite(*table, "_Z4reluv");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->context, kLineB);
  EXPECT_EQ(relu->api, "cuLaunchKernel_ptsz");
  EXPECT_EQ(UniqueSite(*table, "_Z5otherv"), nullptr);
}

TEST(GraphKernelSites, ANameCapturedAtTwoSitesHasNone) {
  GraphKernelSites sites;
  sites.OnKernelCaptured(kGraph, "add", kLineA, "cuLaunchKernel");
  sites.OnKernelCaptured(kGraph, "add", kLineA, "cuLaunchKernel");  // a loop: one site
  sites.OnKernelCaptured(kGraph, "mul", kLineA, "cuLaunchKernel");
  sites.OnKernelCaptured(kGraph, "mul", kLineB, "cuLaunchKernel");
  sites.OnExecCreated(kExec, kGraph);
  const auto table = sites.ForLaunch(kExec);
  ASSERT_NE(table, nullptr);
  ASSERT_NE(UniqueSite(*table, "add"), nullptr);
  EXPECT_EQ(UniqueSite(*table, "add")->context, kLineA);
  EXPECT_EQ(UniqueSite(*table, "mul"), nullptr);
  EXPECT_TRUE(table->at("mul").several_sites);
}

TEST(GraphKernelSites, InstantiationTakesASnapshotThatOutlivesTheGraph) {
  GraphKernelSites sites;
  sites.OnKernelCaptured(kGraph, "k", kLineA, "cuLaunchKernel");
  sites.OnExecCreated(kExec, kGraph);
  // The graph grows and is destroyed after instantiation; the executable
  // graph runs what it was instantiated from.
  sites.OnKernelCaptured(kGraph, "k", kLineB, "cuLaunchKernel");
  sites.OnGraphDestroyed(kGraph);
  EXPECT_EQ(sites.graphs(), 0u);
  const auto table = sites.ForLaunch(kExec);
  ASSERT_NE(table, nullptr);
  ASSERT_NE(UniqueSite(*table, "k"), nullptr);
  EXPECT_EQ(UniqueSite(*table, "k")->context, kLineA);
  sites.OnExecDestroyed(kExec);
  EXPECT_EQ(sites.ForLaunch(kExec), nullptr);
  // A launch still running keeps its table.
  EXPECT_EQ(UniqueSite(*table, "k")->context, kLineA);
}

TEST(GraphKernelSites, ClonesHaveTheOriginalsKernels) {
  GraphKernelSites sites;
  sites.OnKernelCaptured(kGraph, "k", kLineA, "cuLaunchKernel");
  sites.OnGraphCloned(0x101, kGraph);
  sites.OnExecCreated(kExec, 0x101);
  const auto table = sites.ForLaunch(kExec);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(UniqueSite(*table, "k")->context, kLineA);
}

TEST(GraphKernelSites, GraphsWithoutCapturedKernelsAndReusedHandlesHaveNoTable) {
  GraphKernelSites sites;
  sites.OnKernelCaptured(kGraph, "k", kLineA, "cuLaunchKernel");
  sites.OnExecCreated(kExec, kGraph);
  ASSERT_NE(sites.ForLaunch(kExec), nullptr);
  // The driver reuses the handle for a graph built without capture.
  sites.OnExecCreated(kExec, 0x999);
  EXPECT_EQ(sites.ForLaunch(kExec), nullptr);
  sites.OnKernelCaptured(0, "k", kLineA, "cuLaunchKernel");
  sites.OnKernelCaptured(kGraph + 1, "", kLineA, "cuLaunchKernel");
  EXPECT_EQ(sites.graphs(), 1u);
}

TEST(GraphKernelSites, TheOldestGraphsAreDroppedBeyondTheBound) {
  GraphKernelSites sites(2);
  for (uint64_t graph = 1; graph <= 3; ++graph) {
    sites.OnKernelCaptured(graph, "k", kLineA, "cuLaunchKernel");
    sites.OnExecCreated(graph + 100, graph);
  }
  EXPECT_EQ(sites.graphs(), 2u);
  EXPECT_EQ(sites.execs(), 2u);
  EXPECT_EQ(sites.ForLaunch(101), nullptr);
  EXPECT_NE(sites.ForLaunch(102), nullptr);
  EXPECT_NE(sites.ForLaunch(103), nullptr);
}

}  // namespace
}  // namespace deepcontext::cupti
