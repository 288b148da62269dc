// The driver API and resource callbacks of the GPU backend. They run on
// application threads, inside the CUDA call: launches are mapped to the
// calling context here, graph nodes to the context that created them.
#include <sys/syscall.h>
#include <unistd.h>

#include <string_view>

#include "deepcontext/dlmonitor.h"
#include "runtime/common/hot_path.h"
#include "runtime/common/thread_instance.h"
#include "runtime/cpu/clocks.h"
#include "runtime/cupti/gpu_backend_state.h"
#include "runtime/cupti/graph_child_nodes.h"

namespace deepcontext::cupti {
namespace {

// API name for graph nodes created outside any traced call.
constexpr std::string_view kGraphNodeApi = "<graph node>";

// The traced driver call running on this thread, between its entry and
// exit callbacks (driver calls do not nest).
struct ApiCall {
  const char* name = nullptr;
  uint64_t correlation_id = 0;
  gpu::ContextId context = 0;
  // A graph node was created inside the call: the call was captured into
  // a graph and will produce no records of its own.
  bool created_graph_node = false;
  uint64_t sync_start_ns = 0;  // a synchronization's entry time
  // What a graph node created inside the call runs, for XLA's command
  // buffers: the kernel's name (null when CUPTI gives none), "<memset>",
  // "<memcpy>". Kept as a C string: a view would measure a kernel's
  // (often long, mangled) name at every launch, for the rare launch
  // captured into a graph.
  const char* captured = nullptr;
  bool kernel_launch = false;  // `captured` names a kernel (null: unnamed)
};
thread_local ApiCall t_call;
// The graph nodes cloned on this thread, to check an instantiation's
// numbering before its child-graph nodes are linked. On the heap: the
// table would take most of the runtime's static TLS block, whose overflow
// turns every thread-local read into a call. Null while the thread exits.
AnnouncedClones* ThreadClones() { return ThreadInstance<AnnouncedClones>(); }

DEEPCONTEXT_HOT
uint64_t ThreadId() {
  thread_local const uint64_t id = static_cast<uint64_t>(syscall(SYS_gettid));
  return id;
}

uint64_t GraphKey(const void* handle) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
}

}  // namespace

DEEPCONTEXT_HOT
void GpuBackendState::OnCallback(CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid, const void* data) {
  // Ranges are followed in pauses too, so that nesting stays balanced.
  if (domain == CUPTI_CB_DOMAIN_NVTX) {
    OnNvtx(cbid, data);
    return;
  }
  if (!window_detach_.tracing()) {
    OnCallbackWhilePaused(domain, data);
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    OnDriverApi(cbid, *static_cast<const CUpti_CallbackData*>(data));
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    OnResource(cbid, *static_cast<const CUpti_ResourceData*>(data));
  }
}

DEEPCONTEXT_HOT
void GpuBackendState::OnDriverApi(CUpti_CallbackId cbid,
                                  const CUpti_CallbackData& data) {
  if (cbid >= api_classes_.size()) return;
  const DriverApiClass api = api_classes_[cbid];
  if (api == DriverApiClass::kOther) return;
  if (api == DriverApiClass::kGraphExecEdit) {
    if (data.callbackSite == CUPTI_API_ENTER) {
      graphs_.OnNodeSetEnabled(cbid, data.functionParams);
    }
    return;
  }
  const char* name = data.functionName != nullptr ? data.functionName
                                                  : api_names_[cbid];
  if (name == nullptr) name = "<driver API>";

  dlmonitor_gpu_api_data_t payload{};
  payload.struct_size = sizeof(payload);
  payload.name = name;
  payload.correlation_id = data.correlationId;
  dlmonitor_event_t event{};
  event.struct_size = sizeof(event);
  event.domain = DLMONITOR_DOMAIN_GPU_API;
  event.gpu_api = &payload;

  if (data.callbackSite == CUPTI_API_ENTER) {
    event.phase = DLMONITOR_PHASE_ENTER;
    // DLMonitor fills event.context when a tool listens to GPU API events;
    // otherwise the context is looked up here.
    dlmonitor_event_emit(&event);
    gpu::ContextId context = event.context;
    if (context == 0 && dlmonitor_context_current(&context) != DLMONITOR_OK) {
      context = 0;
    }
    // Inside XLA's ranges: the HLO operation (or compilation) below the line.
    const gpu::ContextId line = context;
    if (xla_ranges_.seen_ranges()) context = xla_ranges_.Refine(context);
    t_call = ApiCall{name, data.correlationId, context, false};
    if (api == DriverApiClass::kKernelLaunch) {
      t_call.kernel_launch = true;
      t_call.captured = data.symbolName;
    } else if (api == DriverApiClass::kMemset || api == DriverApiClass::kCopy) {
      // String literals: their data ends in a NUL.
      t_call.captured = api == DriverApiClass::kMemset ? gpu::kGraphMemsetName.data()
                                                       : gpu::kGraphMemcpyName.data();
    }
    if (api == DriverApiClass::kGraphLaunch && xla_ranges_.seen_ranges()) {
      xla_ranges_.OnGraphLaunch(data.correlationId, line);
    }
    if (!ProducesRecords(api)) return;
    gpu::LaunchRecord launch;
    launch.correlation_id = data.correlationId;
    launch.context = context;
    launch.api_name = name;
    launch.thread = ThreadId();
    launch.expected_records =
        api == DriverApiClass::kGraphLaunch
            ? graphs_.LaunchRecords(cbid, data.functionParams)
            : ExpectedRecords(api,
                              api_names_[cbid] != nullptr ? api_names_[cbid] : name,
                              Traced());
    launch.record_at_return = api == DriverApiClass::kSync;
    attribution_.OnLaunch(launch);
    if (pc_sampling_ != nullptr && api == DriverApiClass::kKernelLaunch) {
      pc_sampling_->OnKernelLaunch(data.correlationId, context, name, data.context);
    }
    // Samples of a graph's kernels carry the graph launch's correlation id.
    if (pc_sampling_ != nullptr && api == DriverApiClass::kGraphLaunch) {
      pc_sampling_->OnGraphLaunch(data.correlationId, context, name, data.context,
                                  GraphExecOfLaunch(cbid, data.functionParams));
    }
    if (gpu_metrics_ != nullptr && api == DriverApiClass::kKernelLaunch) {
      gpu_metrics_->OnApiEnter(cbid, data.functionParams, data.correlationId, context, name,
                               data.context);
    }
    if (api == DriverApiClass::kSync) {
      t_call.sync_start_ns = static_cast<uint64_t>(cpu::MonotonicNs());
    }
    return;
  }
  // API exit.
  if (gpu_metrics_ != nullptr && api == DriverApiClass::kKernelLaunch) {
    gpu_metrics_->OnApiExit(data.correlationId);
  }
  if (ProducesRecords(api)) {
    const bool captured = t_call.created_graph_node &&
                          t_call.correlation_id == data.correlationId &&
                          api != DriverApiClass::kGraphLaunch;
    // A failed call enqueued nothing; a failed synchronization may still
    // have waited and been recorded.
    const auto* result = static_cast<const CUresult*>(data.functionReturnValue);
    const bool failed = api != DriverApiClass::kSync && result != nullptr &&
                        *result != CUDA_SUCCESS;
    if (captured || failed) attribution_.ForgetLaunch(data.correlationId);
    // The wait is the time spent in the call; its record is made here.
    if (api == DriverApiClass::kSync && !captured &&
        t_call.correlation_id == data.correlationId && t_call.sync_start_ns != 0) {
      gpu::SyncRecord sync;
      sync.correlation_id = data.correlationId;
      sync.start_ns = t_call.sync_start_ns;
      sync.end_ns = static_cast<uint64_t>(cpu::MonotonicNs());
      sync.kind = SyncKindOfApi(api_names_[cbid] != nullptr ? api_names_[cbid] : name);
      attribution_.OnSync(sync);
    }
  }
  t_call = ApiCall{};
  event.phase = DLMONITOR_PHASE_EXIT;
  dlmonitor_event_emit(&event);
}

void GpuBackendState::OnCallbackWhilePaused(CUpti_CallbackDomain domain,
                                            const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  if (static_cast<const CUpti_CallbackData*>(data)->callbackSite != CUPTI_API_EXIT) {
    return;
  }
  // A call that entered while tracing ends untraced.
  t_call = ApiCall{};
  // NVIDIA's safe place to detach CUPTI: the exit of a CUDA call, where no
  // other thread is inside CUPTI (window_detach.h).
  window_detach_.OnApiExit([this] { f_.finalize(); });
}

void GpuBackendState::OnResource(CUpti_CallbackId cbid,
                                 const CUpti_ResourceData& data) {
  if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
    const auto* module = static_cast<const CUpti_ModuleResourceData*>(data.resourceDescriptor);
    if (pc_sampling_ != nullptr && module != nullptr) {
      pc_sampling_->OnModuleLoaded(module->pCubin, module->cubinSize);
    }
    return;
  }
  if (pc_sampling_ != nullptr) TrackGraphForSamples(cbid, data);
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED) LinkChildGraphNodes(data);
  if (graphs_.OnResource(cbid, data.resourceDescriptor, Traced())) return;
  if (cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED &&
      cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    return;
  }
  const auto* graph = static_cast<const CUpti_GraphData*>(data.resourceDescriptor);
  if (graph == nullptr || graph->node == nullptr) return;
  uint64_t node_id = 0;
  if (f_.get_graph_node_id(graph->node, &node_id) != CUPTI_SUCCESS) return;

  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    if (AnnouncedClones* clones = ThreadClones(); clones != nullptr) clones->Add(node_id);
    uint64_t original_id = 0;
    if (graph->originalNode != nullptr &&
        f_.get_graph_node_id(graph->originalNode, &original_id) == CUPTI_SUCCESS) {
      attribution_.OnGraphNodeCloned(node_id, original_id);
    }
    return;
  }
  // Inside a traced call (a launch captured from a stream, or cuGraphAdd*)
  // the call's context was taken at its entry.
  gpu::ContextId context = t_call.context;
  std::string_view api = kGraphNodeApi;
  if (t_call.name != nullptr) {
    api = t_call.name;
    t_call.created_graph_node = true;
    // Where the samples of this kernel's replays go.
    if (pc_sampling_ != nullptr && t_call.kernel_launch && t_call.captured != nullptr) {
      pc_sampling_->graph_kernel_sites().OnKernelCaptured(GraphKey(graph->graph),
                                                          t_call.captured, context, api);
    }
    // A launch captured into a graph XLA embeds in its command buffer.
    if ((t_call.kernel_launch || t_call.captured != nullptr) && xla_ranges_.seen_ranges()) {
      xla_ranges_.OnCapturedKernel(t_call.captured != nullptr ? std::string_view(t_call.captured)
                                                              : std::string_view());
    }
  } else if (dlmonitor_context_current(&context) != DLMONITOR_OK) {
    context = 0;
  } else if (xla_ranges_.seen_ranges()) {
    context = xla_ranges_.Refine(context);
  }
  attribution_.OnGraphNodeCreated(node_id, context, api);
}

void GpuBackendState::LinkChildGraphNodes(const CUpti_ResourceData& data) {
  const auto* graph = static_cast<const CUpti_GraphData*>(data.resourceDescriptor);
  uint32_t exec_id = 0;
  AnnouncedClones* const clones = ThreadClones();
  if (clones == nullptr || graph == nullptr || graph->graph == nullptr ||
      graph->graphExec == nullptr ||
      f_.get_graph_exec_id == nullptr ||
      f_.get_graph_exec_id(graph->graphExec, &exec_id) != CUPTI_SUCCESS) {
    return;
  }
  CudaGraphFunctions functions;
  driver_->GraphFunctions(&functions);
  const auto links = cupti::LinkChildGraphNodes(
      functions,
      [this](CUgraphNode node, uint64_t* id) {
        return f_.get_graph_node_id(node, id) == CUPTI_SUCCESS;
      },
      graph->graph, exec_id, clones->Take(exec_id));
  // The captured node carries its command's context; the child graph node,
  // added inside the same command, stands in when the capture was not seen.
  for (const ChildNodeLink& link : links) {
    attribution_.OnGraphNodeCloned(link.exec_node, link.child_graph_node);
    attribution_.OnGraphNodeCloned(link.exec_node, link.source_node);
  }
  linked_child_nodes_.fetch_add(links.size(), std::memory_order_relaxed);
}

void GpuBackendState::TrackGraphForSamples(CUpti_CallbackId cbid,
                                           const CUpti_ResourceData& data) {
  const auto* graph = static_cast<const CUpti_GraphData*>(data.resourceDescriptor);
  if (graph == nullptr) return;
  GraphKernelSites& sites = pc_sampling_->graph_kernel_sites();
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_GRAPH_CLONED:
      sites.OnGraphCloned(GraphKey(graph->graph), GraphKey(graph->originalGraph));
      break;
    case CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING:
      sites.OnGraphDestroyed(GraphKey(graph->graph));
      break;
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED:
      sites.OnExecCreated(GraphKey(graph->graphExec), GraphKey(graph->graph));
      break;
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING:
      sites.OnExecDestroyed(GraphKey(graph->graphExec));
      break;
    default:
      break;
  }
}

}  // namespace deepcontext::cupti
