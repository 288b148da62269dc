// Records, as JSON lines, what a JAX/XLA program shows a CUPTI client: NVTX
// ranges (CUPTI as the NVTX injection), driver launch calls, graph node
// creation/cloning and kernel/copy/memset activity records. It regenerates
// the fixtures under tests/unit/runtime/xla/fixtures; it is not part of the
// profiler. Build: see run_probe.sh. Output file: $PROBE_OUT (one per pid).
#include <cuda.h>
#include <cupti.h>
#include <generated_nvtx_meta.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

FILE* out = nullptr;
std::mutex out_mutex;
CUpti_SubscriberHandle subscriber;
thread_local const char* current_api = nullptr;
thread_local uint32_t current_correlation = 0;

long Tid() { return syscall(SYS_gettid); }

std::string Escape(const char* s) {
  std::string r;
  if (!s) return r;
  for (; *s; ++s) {
    unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') { r += '\\'; r += static_cast<char>(c); }
    else if (c < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); r += b; }
    else r += static_cast<char>(c);
  }
  return r;
}

void Line(const std::string& s) {
  std::lock_guard<std::mutex> lock(out_mutex);
  fputs(s.c_str(), out);
  fputc('\n', out);
}

std::string Attr(const nvtxEventAttributes_t* a) {
  if (!a) return "\"msg_type\":-1";
  std::string r = "\"msg_type\":" + std::to_string(a->messageType);
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII)
    r += ",\"msg\":\"" + Escape(a->message.ascii) + "\"";
  else if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
    r += ",\"str_handle\":" + std::to_string(reinterpret_cast<uintptr_t>(a->message.registered));
  r += ",\"payload_type\":" + std::to_string(a->payloadType) +
       ",\"category\":" + std::to_string(a->category);
  return r;
}

void OnNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* d) {
  std::string r = "{\"ev\":\"nvtx\",\"tid\":" + std::to_string(Tid()) + ",\"fn\":\"" +
                  Escape(d->functionName) + "\"";
  const void* p = d->functionParams;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      auto* q = static_cast<const nvtxDomainRangePushEx_params*>(p);
      r += ",\"domain\":" + std::to_string(reinterpret_cast<uintptr_t>(q->domain)) + "," +
           Attr(q->core.eventAttrib);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePop: {
      auto* q = static_cast<const nvtxDomainRangePop_params*>(p);
      r += ",\"domain\":" + std::to_string(reinterpret_cast<uintptr_t>(q->domain));
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
      auto* q = static_cast<const nvtxDomainRangeStartEx_params*>(p);
      r += ",\"domain\":" + std::to_string(reinterpret_cast<uintptr_t>(q->domain)) + "," +
           Attr(q->core.eventAttrib);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainMarkEx: {
      auto* q = static_cast<const nvtxDomainMarkEx_params*>(p);
      r += ",\"domain\":" + std::to_string(reinterpret_cast<uintptr_t>(q->domain)) + "," +
           Attr(q->core.eventAttrib);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePushEx: {
      auto* q = static_cast<const nvtxRangePushEx_params*>(p);
      r += "," + Attr(q->eventAttrib);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePushA: {
      auto* q = static_cast<const nvtxRangePushA_params*>(p);
      r += ",\"msg\":\"" + Escape(q->message) + "\"";
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainCreateA: {
      auto* q = static_cast<const nvtxDomainCreateA_params*>(p);
      r += ",\"name\":\"" + Escape(q->name) + "\"";
      if (d->functionReturnValue)
        r += ",\"ret\":" + std::to_string(reinterpret_cast<uintptr_t>(
                               *static_cast<const nvtxDomainHandle_t*>(d->functionReturnValue)));
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA: {
      auto* q = static_cast<const nvtxDomainRegisterStringA_params*>(p);
      r += ",\"domain\":" + std::to_string(reinterpret_cast<uintptr_t>(q->domain)) +
           ",\"string\":\"" + Escape(q->string) + "\"";
      if (d->functionReturnValue)
        r += ",\"ret\":" + std::to_string(reinterpret_cast<uintptr_t>(
                               *static_cast<const nvtxStringHandle_t*>(d->functionReturnValue)));
      break;
    }
    default:
      break;
  }
  r += "}";
  Line(r);
}

std::string KernelNameOfNode(CUgraphNode node) {
  CUDA_KERNEL_NODE_PARAMS params;
  memset(&params, 0, sizeof params);
  if (cuGraphKernelNodeGetParams(node, &params) != CUDA_SUCCESS) return "?";
  const char* name = nullptr;
  if (params.func && cuFuncGetName(&name, params.func) == CUDA_SUCCESS && name) return name;
  return "?";
}

// The nodes of `graph` and of its child graphs, depth first, as JSON
// [[node id, type, depth, kernel name, child graph id], ...]: which node ids
// (and graph ids) a command buffer's traced, nested commands carry.
void DumpGraph(CUgraph graph, int depth, std::string* r) {
  if (depth > 8) return;
  size_t count = 0;
  if (cuGraphGetNodes(graph, nullptr, &count) != CUDA_SUCCESS || count == 0) return;
  std::vector<CUgraphNode> nodes(count);
  if (cuGraphGetNodes(graph, nodes.data(), &count) != CUDA_SUCCESS) return;
  for (size_t i = 0; i < count; ++i) {
    uint64_t id = 0;
    cuptiGetGraphNodeId(nodes[i], &id);
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    cuGraphNodeGetType(nodes[i], &type);
    CUgraph child = nullptr;
    uint32_t child_id = 0;
    if (type == CU_GRAPH_NODE_TYPE_GRAPH && cuGraphChildGraphNodeGetGraph(nodes[i], &child) == CUDA_SUCCESS) {
      cuptiGetGraphId(child, &child_id);
    }
    if (r->back() != '[') *r += ",";
    *r += "[" + std::to_string(id) + "," + std::to_string(static_cast<int>(type)) + "," +
          std::to_string(depth) + ",\"" +
          (type == CU_GRAPH_NODE_TYPE_KERNEL ? Escape(KernelNameOfNode(nodes[i]).c_str()).substr(0, 100)
                                             : std::string()) +
          "\"," + std::to_string(child_id) + "]";
    if (child != nullptr) DumpGraph(child, depth + 1, r);
  }
}

void OnResource(CUpti_CallbackId cbid, const CUpti_ResourceData* d) {
  if (cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED && cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED &&
      cbid != CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED && cbid != CUPTI_CBID_RESOURCE_GRAPH_CLONED &&
      cbid != CUPTI_CBID_RESOURCE_GRAPH_CREATED && cbid != CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING &&
      cbid != CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING)
    return;
  auto* g = static_cast<const CUpti_GraphData*>(d->resourceDescriptor);
  uint32_t graph_id = 0, exec_id = 0, orig_graph_id = 0;
  uint64_t node_id = 0, orig_node_id = 0;
  if (g->graph) cuptiGetGraphId(g->graph, &graph_id);
  if (g->originalGraph) cuptiGetGraphId(g->originalGraph, &orig_graph_id);
  if (g->node) cuptiGetGraphNodeId(g->node, &node_id);
  if (g->originalNode) cuptiGetGraphNodeId(g->originalNode, &orig_node_id);
  if (g->graphExec) cuptiGetGraphExecId(g->graphExec, &exec_id);
  const char* what = cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED   ? "node_created"
                     : cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED  ? "node_cloned"
                     : cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED ? "exec_created"
                     : cbid == CUPTI_CBID_RESOURCE_GRAPH_CLONED      ? "graph_cloned"
                     : cbid == CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING ? "graph_destroyed"
                     : cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING ? "exec_destroyed"
                                                                     : "graph_created";
  std::string r = std::string("{\"ev\":\"") + what + "\",\"tid\":" + std::to_string(Tid()) +
                  ",\"graph\":" + std::to_string(graph_id) + ",\"orig_graph\":" +
                  std::to_string(orig_graph_id) + ",\"node\":" + std::to_string(node_id) +
                  ",\"orig_node\":" + std::to_string(orig_node_id) + ",\"exec\":" +
                  std::to_string(exec_id) + ",\"api\":\"" + Escape(current_api) +
                  "\",\"api_corr\":" + std::to_string(current_correlation);
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
    r += ",\"type\":" + std::to_string(static_cast<int>(g->nodeType));
    if (g->nodeType == CU_GRAPH_NODE_TYPE_KERNEL)
      r += ",\"kernel\":\"" + Escape(KernelNameOfNode(g->node).c_str()) + "\"";
    CUgraph child = nullptr;
    if (g->nodeType == CU_GRAPH_NODE_TYPE_GRAPH &&
        cuGraphChildGraphNodeGetGraph(g->node, &child) == CUDA_SUCCESS && child != nullptr) {
      uint32_t child_id = 0;
      cuptiGetGraphId(child, &child_id);
      r += ",\"child_graph\":" + std::to_string(child_id) + ",\"child_nodes\":[";
      DumpGraph(child, 0, &r);
      r += "]";
    }
  }
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED && g->graph != nullptr) {
    r += ",\"nodes\":[";
    DumpGraph(g->graph, 0, &r);
    r += "]";
  }
  r += "}";
  Line(r);
}

bool Traced(const char* name) {
  return (strncmp(name, "cuLaunch", 8) == 0 && strncmp(name, "cuLaunchHostFunc", 16) != 0) ||
         strncmp(name, "cuGraphLaunch", 13) == 0 || strncmp(name, "cuMemcpy", 8) == 0 ||
         strncmp(name, "cuMemset", 8) == 0 || strncmp(name, "cuGraphAdd", 10) == 0 ||
         strncmp(name, "cuGraphInstantiate", 18) == 0 || strncmp(name, "cuStreamBeginCapture", 20) == 0 ||
         strncmp(name, "cuStreamEndCapture", 18) == 0 || strncmp(name, "cuGraphExecUpdate", 17) == 0 ||
         strncmp(name, "cuGraphExecKernelNodeSetParams", 30) == 0 ||
         strncmp(name, "cuGraphKernelNodeSetParams", 26) == 0 || strncmp(name, "cuGraphCreate", 13) == 0 ||
         strncmp(name, "cuGraphUpload", 13) == 0 || strncmp(name, "cuGraphNodeSetParams", 20) == 0 ||
         strncmp(name, "cuGraphExecNodeSetParams", 24) == 0 || strncmp(name, "cuGraphExecChildGraphNodeSetParams", 34) == 0 ||
         strncmp(name, "cuGraphClone", 12) == 0 || strncmp(name, "cuGraphDestroy", 14) == 0 ||
         strncmp(name, "cuGraphExecDestroy", 18) == 0;
}

void OnDriver(const CUpti_CallbackData* d) {
  if (!Traced(d->functionName)) return;
  if (d->callbackSite == CUPTI_API_ENTER) {
    current_api = d->functionName;
    current_correlation = d->correlationId;
    std::string r = "{\"ev\":\"api\",\"tid\":" + std::to_string(Tid()) + ",\"fn\":\"" +
                    Escape(d->functionName) + "\",\"corr\":" + std::to_string(d->correlationId);
    if (d->symbolName) r += ",\"symbol\":\"" + Escape(d->symbolName) + "\"";
    r += "}";
    Line(r);
  } else {
    current_api = nullptr;
    current_correlation = 0;
    Line("{\"ev\":\"api_exit\",\"tid\":" + std::to_string(Tid()) + ",\"corr\":" +
         std::to_string(d->correlationId) + "}");
  }
}

void CUPTIAPI Callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_NVTX) OnNvtx(cbid, static_cast<const CUpti_NvtxData*>(data));
  else if (domain == CUPTI_CB_DOMAIN_RESOURCE) OnResource(cbid, static_cast<const CUpti_ResourceData*>(data));
  else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) OnDriver(static_cast<const CUpti_CallbackData*>(data));
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(64, *size));
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    char b[1024];
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(rec);
      snprintf(b, sizeof b,
               "{\"ev\":\"kernel\",\"corr\":%u,\"start\":%llu,\"end\":%llu,\"graph\":%u,\"node\":%llu,"
               "\"stream\":%u,\"name\":\"%s\"}",
               k->correlationId, (unsigned long long)k->start, (unsigned long long)k->end, k->graphId,
               (unsigned long long)k->graphNodeId, k->streamId, Escape(k->name).substr(0, 700).c_str());
      Line(b);
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(rec);
      snprintf(b, sizeof b,
               "{\"ev\":\"memcpy\",\"corr\":%u,\"start\":%llu,\"end\":%llu,\"graph\":%u,\"node\":%llu,"
               "\"bytes\":%llu,\"copy_kind\":%u}",
               m->correlationId, (unsigned long long)m->start, (unsigned long long)m->end, m->graphId,
               (unsigned long long)m->graphNodeId, (unsigned long long)m->bytes, m->copyKind);
      Line(b);
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(rec);
      snprintf(b, sizeof b,
               "{\"ev\":\"memset\",\"corr\":%u,\"start\":%llu,\"end\":%llu,\"graph\":%u,\"node\":%llu,"
               "\"bytes\":%llu}",
               m->correlationId, (unsigned long long)m->start, (unsigned long long)m->end, m->graphId,
               (unsigned long long)m->graphNodeId, (unsigned long long)m->bytes);
      Line(b);
    }
  }
  free(buffer);
}

void Finish() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(out_mutex);
  if (out) fflush(out);
}

__attribute__((constructor)) void Start() {
  const char* path = getenv("PROBE_OUT");
  if (!path) return;
  std::string file = std::string(path) + "." + std::to_string(getpid()) + ".jsonl";
  out = fopen(file.c_str(), "w");
  if (!out) return;
  if (cuptiSubscribe(&subscriber, Callback, nullptr) != CUPTI_SUCCESS) {
    fprintf(out, "{\"ev\":\"error\",\"what\":\"subscribe\"}\n");
    return;
  }
  cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_NVTX);
  cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
  cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  atexit(Finish);
}

}  // namespace
