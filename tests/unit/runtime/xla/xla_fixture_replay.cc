#include "tests/unit/runtime/xla/xla_fixture_replay.h"

#include <zlib.h>

#include <gtest/gtest.h>
#ifdef XLA_TEST_HAVE_CUPTI
#include <unordered_map>

#include "tests/unit/runtime/cupti/fake_cuda_graph.h"
#endif

namespace deepcontext::xla::replay {

using gpu::FakeContextSink;
using gpu::GpuMetric;

namespace {

bool IsWorker(ContextId context) { return context >= kFirstWorker && context < 1000; }

bool ProducesRecords(const std::string& api) {
  return api.rfind("cuLaunch", 0) == 0 || api.rfind("cuMemcpy", 0) == 0 ||
         api.rfind("cuMemset", 0) == 0 || api.rfind("cuGraphLaunch", 0) == 0;
}

// A recorded copy or memset: the fields the two records share.
template <typename Record>
Record TransferRecord(const json& e) {
  Record record;
  record.correlation_id = e["corr"];
  record.graph_node_id = e["node"];
  record.start_ns = e["start"];
  record.end_ns = e["end"];
  record.bytes = e["bytes"];
  return record;
}

}  // namespace

std::vector<json> ReadFixture(const std::string& name) {
  const std::string path = std::string(XLA_FIXTURE_DIR) + "/" + name;
  gzFile file = gzopen(path.c_str(), "rb");
  EXPECT_NE(file, nullptr) << path;
  std::vector<json> events;
  if (file == nullptr) return events;
  std::string text;
  char buffer[1 << 16];
  int n;
  while ((n = gzread(file, buffer, sizeof buffer)) > 0) text.append(buffer, n);
  gzclose(file);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) events.push_back(json::parse(text.substr(start, end - start)));
    start = end + 1;
  }
  return events;
}

uint64_t PythonThread(const std::vector<json>& events) {
  // The thread that created XLA's NVTX domain is the one that first ran
  // JAX: the Python main thread.
  for (const json& e : events) {
    if (e.value("fn", "") == "nvtxDomainCreateA") return e["tid"];
  }
  return 0;
}

bool Contains(const std::vector<std::string>& path, const std::string& name) {
  for (const auto& n : path) {
    if (n == name) return true;
  }
  return false;
}

double KernelTime(const std::vector<json>& kernels, bool graphs_only) {
  double total = 0;
  for (const json& k : kernels) {
    if (graphs_only && k["graph"] == 0) continue;
    total += static_cast<double>(k["end"].get<uint64_t>() - k["start"].get<uint64_t>());
  }
  return total;
}

Replay::Replay(const std::vector<json>& events, uint64_t python_thread,
               const std::string& hlo_text, LoopCalls loop)
    : ranges_(sink, &IsWorker, sources_), python_thread_(python_thread), loop_(std::move(loop)) {
  // What the Python package registers once JAX compiled the module.
  if (!hlo_text.empty()) sources_.Add(ParseHloSources(hlo_text));
  base_[python_thread] = kLine;
  // As the CUPTI backend wires them (gpu_backend_state.h).
  attribution_.SetGraphKernelResolver(
      [this](uint64_t correlation, uint64_t node, std::string_view kernel) {
        return ranges_.ResolveGraphKernel(correlation, node, kernel);
      });
  attribution_.SetGraphNodePlacer([this](ContextId node, ContextId launch) {
    return ranges_.PlaceReplayed(node, launch);
  });
  for (const json& e : events) {
    if (!loop_.module.empty()) FollowCalls(e);
    const std::string ev = e["ev"];
    if (ev == "kernel" || ev == "memcpy" || ev == "memset") {
      Record(e);
      continue;
    }
    const uint64_t tid = e["tid"];
    if (!base_.count(tid)) base_[tid] = kFirstWorker + base_.size();
    auto& thread = threads_[tid];
    if (!thread) thread = std::make_unique<RecordedThread>();
    thread->Run([&, tid] { OnThread(tid, e); });
  }
  attribution_.Flush();
}

// Counts the Python thread's runs of the loop's module (its outermost
// XlaModule ranges) and moves the thread to kLoopLine from the chosen one.
void Replay::FollowCalls(const json& e) {
  const std::string fn = e.value("fn", "");
  if (fn == "nvtxDomainRegisterStringA") strings_[e["ret"]] = e["string"];
  if (e["ev"] != "nvtx" || e["tid"] != python_thread_) return;
  if (fn == "nvtxDomainRangePop" && depth_ > 0) --depth_;
  if (fn != "nvtxDomainRangePushEx") return;
  const std::string text = e["msg_type"] == 3 ? strings_[e["str_handle"]] : e.value("msg", "");
  if (depth_++ == 0 && text.rfind("XlaModule:", 0) == 0 &&
      text.find("hlo_module=" + loop_.module + ",") != std::string::npos &&
      ++module_runs_ >= loop_.from) {
    base_[python_thread_] = kLoopLine;
  }
}

void Replay::OnThread(uint64_t tid, const json& e) {
  const std::string ev = e["ev"];
  const std::string fn = e.value("fn", "");
  if (ev == "nvtx") {
    const uint64_t domain = e.value("domain", uint64_t{0});
    if (fn == "nvtxDomainCreateA") {
      ranges_.OnDomainCreated(e["ret"], e["name"].get<std::string>());
    } else if (fn == "nvtxDomainRegisterStringA") {
      ranges_.OnStringRegistered(e["ret"], e["string"].get<std::string>());
    } else if (fn == "nvtxDomainRangePushEx") {
      const bool opened = e["msg_type"] == 3
                              ? ranges_.PushRegistered(domain, e["str_handle"])
                              : ranges_.Push(domain, e.value("msg", ""));
      if (opened) ranges_.BeginCompile(base_[tid]);
    } else if (fn == "nvtxDomainRangePop") {
      ranges_.Pop(domain);
    }
  } else if (ev == "api") {
    const ContextId context = ranges_.Refine(base_[tid]);
    call_[tid] = {context, fn};
    if (fn.rfind("cuGraphLaunch", 0) == 0) ranges_.OnGraphLaunch(e["corr"], base_[tid]);
    if (ProducesRecords(fn)) {
      gpu::LaunchRecord launch;
      launch.correlation_id = e["corr"];
      launch.context = context;
      launch.api_name = fn;
      launch.thread = tid;
      launch.expected_records = fn.rfind("cuGraphLaunch", 0) == 0 ? 0 : 1;
      attribution_.OnLaunch(launch);
    }
  } else if (ev == "node_created") {
    attribution_.OnGraphNodeCreated(e["node"], call_[tid].first, call_[tid].second);
    // A kernel launch captured into a graph.
    if (call_[tid].second.rfind("cuLaunchKernel", 0) == 0 && e.contains("kernel")) {
      ranges_.OnCapturedKernel(e["kernel"].get<std::string>());
    }
  } else if (ev == "node_cloned") {
    attribution_.OnGraphNodeCloned(e["node"], e["orig_node"]);
#ifdef XLA_TEST_HAVE_CUPTI
    clones_.Add(e["node"]);
#endif
  } else if (ev == "exec_created" && e.contains("nodes")) {
    LinkChildGraphNodes(e);
  }
}

// What the backend does at GRAPHEXEC_CREATED (api_callbacks.cc), on the
// source graph as record_probe.so listed it: [id, type, depth, kernel,
// child graph id] depth first.
void Replay::LinkChildGraphNodes([[maybe_unused]] const json& e) {
#ifdef XLA_TEST_HAVE_CUPTI
  CUgraph_st root;
  std::vector<std::unique_ptr<CUgraph_st>> children;
  std::unordered_map<CUgraphNode, uint64_t> ids;
  for (const json& n : e["nodes"]) {
    const int type = n[1], depth = n[2];
    if (depth > 1 || (depth == 1 && children.empty())) return;  // not made by XLA
    CUgraph_st& graph = depth == 0 ? root : *children.back();
    CUgraph child = nullptr;
    if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
      children.push_back(std::make_unique<CUgraph_st>());
      child = children.back().get();
    }
    ids[graph.Add(type, child)] = n[0];
  }
  const auto links = cupti::LinkChildGraphNodes(
      fake_cuda::GraphFunctions(),
      [&](CUgraphNode node, uint64_t* id) {
        auto it = ids.find(node);
        if (it == ids.end()) return false;
        *id = it->second;
        return true;
      },
      &root, e["exec"].get<uint32_t>(), clones_.Take(e["exec"].get<uint32_t>()));
  for (const auto& link : links) {
    attribution_.OnGraphNodeCloned(link.exec_node, link.child_graph_node);
    attribution_.OnGraphNodeCloned(link.exec_node, link.source_node);
  }
  linked_child_nodes += links.size();
#endif
}

void Replay::Record(const json& e) {
  const std::string ev = e["ev"];
  if (ev == "kernel") {
    gpu::KernelRecord k;
    k.correlation_id = e["corr"];
    k.graph_id = e["graph"];
    k.graph_node_id = e["node"];
    k.start_ns = e["start"];
    k.end_ns = e["end"];
    k.name = e["name"];
    attribution_.OnKernel(k);
    kernels.push_back(e);
  } else if (ev == "memcpy") {
    attribution_.OnMemcpy(TransferRecord<gpu::MemcpyRecord>(e));
  } else {
    attribution_.OnMemset(TransferRecord<gpu::MemsetRecord>(e));
  }
}

std::pair<ContextId, std::vector<std::string>> Replay::PathOf(ContextId id) const {
  std::vector<std::string> names;
  while (id >= FakeContextSink::kFirstId) {
    const auto node = sink.NodeOf(id);
    names.insert(names.begin(), node.name);
    id = node.parent;
  }
  return {id, names};
}

std::map<std::vector<std::string>, double> Replay::TimeUnderLine(
    std::map<std::vector<std::string>, double>* elsewhere, ContextId line) const {
  std::map<std::vector<std::string>, double> by_path;
  for (size_t i = 0; i < sink.node_count(); ++i) {
    const ContextId id = FakeContextSink::kFirstId + i;
    const double t = sink.Get(id, GpuMetric::kGpuTime).sum;
    if (t == 0) continue;
    auto [root, names] = PathOf(id);
    if (root == line) {
      by_path[names] += t;
    } else {
      (*elsewhere)[names] += t;
    }
  }
  return by_path;
}

}  // namespace deepcontext::xla::replay
