// CUPTI's callbacks around CUDA graph work, delivered to the fake CUPTI's
// subscriber as CUPTI delivers them: for backend tests that build graphs
// (fake_cuda_graph.h), capture launches into them and launch them.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <cstdint>

#include "tests/unit/runtime/cupti/fake_cuda_graph.h"
#include "tests/unit/runtime/cupti/fake_cupti.h"

namespace deepcontext::cupti::fake {

// A resource callback (node created or cloned, graph instantiated, ...).
inline void FakeGraphResource(CUpti_CallbackId cbid, CUpti_GraphData graph) {
  FakeCuptiState& s = FakeCupti();
  CUpti_ResourceData data{};
  data.resourceDescriptor = &graph;
  s.callback(s.userdata, CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
}

// A cuLaunchKernel of `kernel` (mangled name) captured into `graph`, as
// stream capture does it: the kernel node is created inside the launch.
inline CUgraphNode FakeCapturedLaunch(uint32_t correlation_id, const char* kernel,
                                      CUgraph graph) {
  FakeCuptiState& s = FakeCupti();
  CUgraphNode node = graph->Add(CU_GRAPH_NODE_TYPE_KERNEL);
  CUresult result = CUDA_SUCCESS;
  CUpti_CallbackData data{};
  data.functionName = "cuLaunchKernel";
  data.symbolName = kernel;
  data.correlationId = correlation_id;
  data.functionReturnValue = &result;
  data.callbackSite = CUPTI_API_ENTER;
  s.callback(s.userdata, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
             &data);
  CUpti_GraphData created{};
  created.graph = graph;
  created.node = node;
  created.nodeType = CU_GRAPH_NODE_TYPE_KERNEL;
  FakeGraphResource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, created);
  data.callbackSite = CUPTI_API_EXIT;
  s.callback(s.userdata, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
             &data);
  return node;
}

// A whole cuGraphLaunch of `exec` (in CUDA context `context`, when given).
inline void FakeGraphLaunch(uint32_t correlation_id, CUgraphExec exec,
                            CUcontext context = nullptr) {
  FakeCuptiState& s = FakeCupti();
  CUresult result = CUDA_SUCCESS;
  cuGraphLaunch_params params{exec, nullptr};
  CUpti_CallbackData data{};
  data.functionName = "cuGraphLaunch";
  data.correlationId = correlation_id;
  data.functionReturnValue = &result;
  data.functionParams = &params;
  data.context = context;
  for (CUpti_ApiCallbackSite site : {CUPTI_API_ENTER, CUPTI_API_EXIT}) {
    data.callbackSite = site;
    s.callback(s.userdata, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
               &data);
  }
}

}  // namespace deepcontext::cupti::fake
