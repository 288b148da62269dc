// Replays what a JAX 0.11.2 training step showed a CUPTI client on an H200
// (tests/gpu/jax_probe/: NVTX ranges, driver calls, graph node events and
// activity records, each on its recorded thread) through XlaRanges and
// GpuAttribution, the way the CUPTI backend feeds them, and checks where
// the GPU time lands.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <condition_variable>
#include <fstream>
#include <sstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "runtime/gpu/gpu_attribution.h"
#include "runtime/xla/xla_ranges.h"
#include "tests/unit/runtime/gpu/fake_context_sink.h"
#ifdef XLA_TEST_HAVE_CUPTI
#include <unordered_map>

#include "runtime/cupti/graph_child_nodes.h"
#include "tests/unit/runtime/cupti/fake_cuda_graph.h"
#endif

namespace deepcontext::xla {
namespace {

using gpu::ContextId;
using gpu::FakeContextSink;
using gpu::GpuMetric;
using nlohmann::json;

constexpr ContextId kLine = 2;          // the Python thread's line
// The line of the later calls, when a replay moves them (a training loop
// calling the function whose first call recorded its command buffer).
constexpr ContextId kLoopLine = 3;
constexpr ContextId kFirstWorker = 100;  // other threads' own nodes
bool IsWorker(ContextId context) { return context >= kFirstWorker && context < 1000; }

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

// Runs closures on one dedicated thread, one at a time, waiting for each:
// the recorded threads' thread-local state stays apart.
class RecordedThread {
 public:
  RecordedThread() : thread_([this] { Loop(); }) {}
  ~RecordedThread() {
    Run(nullptr);
    thread_.join();
  }
  void Run(std::function<void()> work) {
    std::unique_lock<std::mutex> lock(mutex_);
    work_ = std::move(work);
    pending_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !pending_; });
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return pending_; });
      const bool stop = !work_;
      if (work_) work_();
      pending_ = false;
      cv_.notify_all();
      if (stop) return;
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<void()> work_;
  bool pending_ = false;
  std::thread thread_;
};

bool ProducesRecords(const std::string& api) {
  return api.rfind("cuLaunch", 0) == 0 || api.rfind("cuMemcpy", 0) == 0 ||
         api.rfind("cuMemset", 0) == 0 || api.rfind("cuGraphLaunch", 0) == 0;
}

// The calls of a module: from the run of `module` numbered `from` (1 is the
// first, which compiles and records the command buffer), the Python thread
// calls from kLoopLine instead of kLine.
struct LoopCalls {
  std::string module;
  int from = 0;
};

struct Replay {
  FakeContextSink sink;
  HloSourceRegistry sources;
  XlaRanges ranges{sink, &IsWorker, sources};
  gpu::GpuAttribution attribution{sink};
  std::map<uint64_t, std::unique_ptr<RecordedThread>> threads;
  std::map<uint64_t, ContextId> base;  // recorded thread -> its context
  std::map<uint64_t, std::pair<ContextId, std::string>> call;  // thread -> current call
  // Kernel records by graph node and name, for the checks.
  std::vector<json> kernels;

  explicit Replay(const std::vector<json>& events, uint64_t python_thread,
                  const std::string& hlo_text = "", LoopCalls loop = {})
      : python_thread_(python_thread), loop_(std::move(loop)) {
    // What the Python package registers once JAX compiled the module.
    if (!hlo_text.empty()) sources.Add(ParseHloSources(hlo_text));
    base[python_thread] = kLine;
    // As the CUPTI backend wires them (gpu_backend_state.h).
    attribution.SetGraphKernelResolver(
        [this](uint64_t correlation, uint64_t node, std::string_view kernel) {
          return ranges.ResolveGraphKernel(correlation, node, kernel);
        });
    attribution.SetGraphNodePlacer([this](ContextId node, ContextId launch) {
      return ranges.PlaceReplayed(node, launch);
    });
    for (const json& e : events) {
      if (!loop_.module.empty()) FollowCalls(e);
      const std::string ev = e["ev"];
      if (ev == "kernel" || ev == "memcpy" || ev == "memset") {
        Record(e);
        continue;
      }
      const uint64_t tid = e["tid"];
      if (!base.count(tid)) base[tid] = kFirstWorker + base.size();
      auto& thread = threads[tid];
      if (!thread) thread = std::make_unique<RecordedThread>();
      thread->Run([&, tid] { OnThread(tid, e); });
    }
    attribution.Flush();
  }

  // Counts the Python thread's runs of the loop's module (its outermost
  // XlaModule ranges) and moves the thread to kLoopLine from the chosen one.
  void FollowCalls(const json& e) {
    const std::string fn = e.value("fn", "");
    if (fn == "nvtxDomainRegisterStringA") strings_[e["ret"]] = e["string"];
    if (e["ev"] != "nvtx" || e["tid"] != python_thread_) return;
    if (fn == "nvtxDomainRangePop" && depth_ > 0) --depth_;
    if (fn != "nvtxDomainRangePushEx") return;
    const std::string text = e["msg_type"] == 3 ? strings_[e["str_handle"]] : e.value("msg", "");
    if (depth_++ == 0 && text.rfind("XlaModule:", 0) == 0 &&
        text.find("hlo_module=" + loop_.module + ",") != std::string::npos &&
        ++module_runs_ >= loop_.from) {
      base[python_thread_] = kLoopLine;
    }
  }
  const uint64_t python_thread_;
  const LoopCalls loop_;
  std::map<uint64_t, std::string> strings_;
  int depth_ = 0;
  int module_runs_ = 0;

  void OnThread(uint64_t tid, const json& e) {
    const std::string ev = e["ev"];
    const std::string fn = e.value("fn", "");
    if (ev == "nvtx") {
      const uint64_t domain = e.value("domain", uint64_t{0});
      if (fn == "nvtxDomainCreateA") {
        ranges.OnDomainCreated(e["ret"], e["name"].get<std::string>());
      } else if (fn == "nvtxDomainRegisterStringA") {
        ranges.OnStringRegistered(e["ret"], e["string"].get<std::string>());
      } else if (fn == "nvtxDomainRangePushEx") {
        const bool opened = e["msg_type"] == 3
                                ? ranges.PushRegistered(domain, e["str_handle"])
                                : ranges.Push(domain, e.value("msg", ""));
        if (opened) ranges.BeginCompile(base[tid]);
      } else if (fn == "nvtxDomainRangePop") {
        ranges.Pop(domain);
      }
    } else if (ev == "api") {
      const ContextId context = ranges.Refine(base[tid]);
      call[tid] = {context, fn};
      if (fn.rfind("cuGraphLaunch", 0) == 0) ranges.OnGraphLaunch(e["corr"], base[tid]);
      if (ProducesRecords(fn)) {
        gpu::LaunchRecord launch;
        launch.correlation_id = e["corr"];
        launch.context = context;
        launch.api_name = fn;
        launch.thread = tid;
        launch.expected_records = fn.rfind("cuGraphLaunch", 0) == 0 ? 0 : 1;
        attribution.OnLaunch(launch);
      }
    } else if (ev == "node_created") {
      attribution.OnGraphNodeCreated(e["node"], call[tid].first, call[tid].second);
      // A kernel launch captured into a graph.
      if (call[tid].second.rfind("cuLaunchKernel", 0) == 0 && e.contains("kernel")) {
        ranges.OnCapturedKernel(e["kernel"].get<std::string>());
      }
    } else if (ev == "node_cloned") {
      attribution.OnGraphNodeCloned(e["node"], e["orig_node"]);
#ifdef XLA_TEST_HAVE_CUPTI
      clones.Add(e["node"]);
#endif
    } else if (ev == "exec_created" && e.contains("nodes")) {
      LinkChildGraphNodes(e);
    }
  }

  // What the backend does at GRAPHEXEC_CREATED (api_callbacks.cc), on the
  // source graph as record_probe.so listed it: [id, type, depth, kernel,
  // child graph id] depth first.
  void LinkChildGraphNodes([[maybe_unused]] const json& e) {
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
        &root, e["exec"].get<uint32_t>(), clones.Take(e["exec"].get<uint32_t>()));
    for (const auto& link : links) {
      attribution.OnGraphNodeCloned(link.exec_node, link.child_graph_node);
      attribution.OnGraphNodeCloned(link.exec_node, link.source_node);
    }
    linked_child_nodes += links.size();
#endif
  }
  size_t linked_child_nodes = 0;
#ifdef XLA_TEST_HAVE_CUPTI
  cupti::AnnouncedClones clones;  // one recorded thread instantiates
#endif

  void Record(const json& e) {
    const std::string ev = e["ev"];
    const uint64_t start = e["start"], end = e["end"];
    if (ev == "kernel") {
      gpu::KernelRecord k;
      k.correlation_id = e["corr"];
      k.graph_id = e["graph"];
      k.graph_node_id = e["node"];
      k.start_ns = start;
      k.end_ns = end;
      k.name = e["name"];
      attribution.OnKernel(k);
      kernels.push_back(e);
    } else if (ev == "memcpy") {
      gpu::MemcpyRecord m;
      m.correlation_id = e["corr"];
      m.graph_node_id = e["node"];
      m.start_ns = start;
      m.end_ns = end;
      m.bytes = e["bytes"];
      attribution.OnMemcpy(m);
    } else {
      gpu::MemsetRecord m;
      m.correlation_id = e["corr"];
      m.graph_node_id = e["node"];
      m.start_ns = start;
      m.end_ns = end;
      m.bytes = e["bytes"];
      attribution.OnMemset(m);
    }
  }

  // Names from the test-owned context down to `id`, and that context.
  std::pair<ContextId, std::vector<std::string>> PathOf(ContextId id) const {
    std::vector<std::string> names;
    while (id >= FakeContextSink::kFirstId) {
      const auto node = sink.NodeOf(id);
      names.insert(names.begin(), node.name);
      id = node.parent;
    }
    return {id, names};
  }

  // GPU time (ns) by path below the Python line, and elsewhere.
  std::map<std::vector<std::string>, double> TimeUnderLine(
      std::map<std::vector<std::string>, double>* elsewhere, ContextId line = kLine) const {
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
};

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

TEST(XlaFixtureReplay, GraphKernelsLandUnderTheirHloOperations) {
  const auto events = ReadFixture("train_step_graphs.jsonl.gz");
  ASSERT_GT(events.size(), 1000u);
  Replay replay(events, PythonThread(events));
  std::map<std::vector<std::string>, double> elsewhere;
  const auto by_path = replay.TimeUnderLine(&elsewhere);

  // Every CUDA-graph kernel (the steps after the first) sits below an HLO
  // operation recorded into the command buffer, not below the launch.
  double graph_time = 0;
  for (const auto& [path, t] : by_path) {
    if (Contains(path, "cuGraphAddNode_v2")) graph_time += t;
    EXPECT_FALSE(Contains(path, "cuGraphLaunch")) << path.back();
  }
  const double recorded = KernelTime(replay.kernels, true);
  ASSERT_GT(recorded, 0);
  EXPECT_DOUBLE_EQ(graph_time, recorded);

  // The backward GEMM of layer 2, by the kernel XLA named after it.
  const ContextId gemm = replay.sink.Find(
      kLine, {"[backward]", "layer2", "dot_general", "gemm_fusion_dot.6", "cuGraphAddNode_v2",
              "gemm_fusion_dot_6"});
  ASSERT_NE(gemm, 0u);
  // Every step: the first records the command buffer, then launches it.
  EXPECT_EQ(replay.sink.Get(gemm, GpuMetric::kGpuTime).count, 4u);
  // And a forward one.
  EXPECT_NE(replay.sink.Find(kLine, {"[forward]", "layer0", "dot_general", "gemm_fusion_dot.3",
                                     "cuGraphAddNode_v2", "gemm_fusion_dot_3"}),
            0u);
}

TEST(XlaFixtureReplay, LaunchedKernelsLandUnderTheirHloOperations) {
  const auto events = ReadFixture("train_step_no_graphs.jsonl.gz");
  ASSERT_GT(events.size(), 1000u);
  Replay replay(events, PythonThread(events));
  std::map<std::vector<std::string>, double> elsewhere;
  const auto by_path = replay.TimeUnderLine(&elsewhere);
  // train_step's steady state: its kernels under [forward]/[backward] paths.
  double forward = 0, backward = 0;
  for (const auto& [path, t] : by_path) {
    if (!path.empty() && path[0] == "[forward]") forward += t;
    if (!path.empty() && path[0] == "[backward]") backward += t;
  }
  EXPECT_GT(forward, 0);
  EXPECT_GT(backward, 0);
  const ContextId gemm = replay.sink.Find(
      kLine, {"[backward]", "layer1", "dot_general", "gemm_fusion_dot.7", "cuLaunchKernelEx",
              "gemm_fusion_dot_6"});
  ASSERT_NE(gemm, 0u);
  EXPECT_EQ(replay.sink.Get(gemm, GpuMetric::kGpuTime).count, 4u);  // every step
}

TEST(XlaFixtureReplay, GraphKernelsLandUnderTheSourceLinesOfTheirOperation) {
  const auto events = ReadFixture("train_step_graphs.jsonl.gz");
  std::ifstream in(std::string(XLA_FIXTURE_DIR) + "/hlo_train_step.txt");
  std::stringstream hlo;
  hlo << in.rdbuf();
  Replay replay(events, PythonThread(events), hlo.str());
  // train_step:41 value_and_grad -> mlp_loss:36 -> mlp_forward:31 x @ w.
  const ContextId gemm = replay.sink.Find(
      kLine, {"[forward]", "train_step", "mlp_loss", "mlp_forward", "layer0", "dot_general",
              "gemm_fusion_dot.3", "cuGraphAddNode_v2", "gemm_fusion_dot_3"});
  ASSERT_NE(gemm, 0u);
  EXPECT_EQ(replay.sink.Get(gemm, GpuMetric::kGpuTime).count, 4u);
  // Share of the command buffers' kernel time below a source line.
  std::map<std::vector<std::string>, double> elsewhere;
  double with_line = 0, graph_time = 0;
  for (const auto& [path, t] : replay.TimeUnderLine(&elsewhere)) {
    if (!Contains(path, "cuGraphAddNode_v2")) continue;
    graph_time += t;
    if (Contains(path, "train_step")) with_line += t;
  }
  ASSERT_GT(graph_time, 0);
  EXPECT_GE(with_line / graph_time, 0.95);  // the target; 1.0 here
}

// The correlation ids of the Python thread's graph launches, in order.
std::vector<uint64_t> GraphLaunches(const std::vector<json>& events, uint64_t python_thread) {
  std::vector<uint64_t> launches;
  for (const json& e : events) {
    if (e["ev"] == "api" && e["tid"] == python_thread &&
        e["fn"].get<std::string>().rfind("cuGraphLaunch", 0) == 0) {
      launches.push_back(e["corr"]);
    }
  }
  return launches;
}

// GPU time (ns) of the graph records (kernels, copies, memsets) of the
// launches with these correlation ids.
double GraphTimeOf(const std::vector<json>& events, const std::vector<uint64_t>& launches) {
  double total = 0;
  for (const json& e : events) {
    const std::string ev = e["ev"];
    if ((ev != "kernel" && ev != "memcpy" && ev != "memset") || e["node"] == 0) continue;
    if (std::find(launches.begin(), launches.end(), e["corr"].get<uint64_t>()) ==
        launches.end()) {
      continue;
    }
    total += static_cast<double>(e["end"].get<uint64_t>() - e["start"].get<uint64_t>());
  }
  return total;
}

// A training loop: the first call (which compiles, records the command
// buffer and launches it) comes from one line, the later ones, which only
// launch it, from another. Their kernels go under the line that launched
// them, each still below its source lines and HLO instruction.
TEST(XlaFixtureReplay, ReplaysOfACommandBufferLandUnderTheCallThatLaunchedThem) {
  const auto events = ReadFixture("train_step_graphs.jsonl.gz");
  std::ifstream in(std::string(XLA_FIXTURE_DIR) + "/hlo_train_step.txt");
  std::stringstream hlo;
  hlo << in.rdbuf();
  const uint64_t python = PythonThread(events);
  Replay replay(events, python, hlo.str(), {"jit_train_step", 2});
  const std::vector<std::string> gemm_path = {
      "[forward]", "train_step", "mlp_loss", "mlp_forward", "layer0", "dot_general",
      "gemm_fusion_dot.3", "cuGraphAddNode_v2", "gemm_fusion_dot_3"};
  const ContextId recorded = replay.sink.Find(kLine, gemm_path);
  const ContextId replayed = replay.sink.Find(kLoopLine, gemm_path);
  ASSERT_NE(recorded, 0u);
  ASSERT_NE(replayed, 0u);
  EXPECT_EQ(replay.sink.Get(recorded, GpuMetric::kGpuTime).count, 1u);  // the first call
  EXPECT_EQ(replay.sink.Get(replayed, GpuMetric::kGpuTime).count, 3u);  // the loop's

  const std::vector<uint64_t> launches = GraphLaunches(events, python);
  ASSERT_EQ(launches.size(), 4u);
  const double loop_graph_time =
      GraphTimeOf(events, std::vector<uint64_t>(launches.begin() + 1, launches.end()));
  ASSERT_GT(loop_graph_time, 0);
  std::map<std::vector<std::string>, double> elsewhere;
  double loop_time = 0, loop_with_line = 0;
  for (const auto& [path, t] : replay.TimeUnderLine(&elsewhere, kLoopLine)) {
    EXPECT_FALSE(Contains(path, "cuGraphLaunch")) << path.back();
    EXPECT_TRUE(Contains(path, "cuGraphAddNode_v2")) << path.back();
    loop_time += t;
    if (Contains(path, "train_step")) loop_with_line += t;
  }
  EXPECT_DOUBLE_EQ(loop_time, loop_graph_time);
  EXPECT_DOUBLE_EQ(loop_with_line, loop_time);
  // The first call's launch stays exactly where its nodes were recorded.
  double first_graph_time = 0;
  for (const auto& [path, t] : replay.TimeUnderLine(&elsewhere)) {
    if (Contains(path, "cuGraphAddNode_v2")) first_graph_time += t;
  }
  EXPECT_DOUBLE_EQ(first_graph_time, GraphTimeOf(events, {launches[0]}));
}

TEST(XlaFixtureReplay, CompilerThreadsKernelsGoToTheCompilePhase) {
  const auto events = ReadFixture("train_step_graphs.jsonl.gz");
  Replay replay(events, PythonThread(events));
  std::map<std::vector<std::string>, double> elsewhere;
  const auto by_path = replay.TimeUnderLine(&elsewhere);
  double compile = 0, total = 0;
  for (const auto& [path, t] : by_path) {
    total += t;
    if (!path.empty() && path[0] == "[compile]") compile += t;
  }
  // Autotuning (candidate GEMMs, redzone checks) ran on XLA's threads: none
  // of it is left on those threads' own nodes. What stays there are the
  // copies of PJRT's transfer threads (device_put, fetching the loss).
  for (const auto& [path, t] : elsewhere) {
    ASSERT_FALSE(path.empty());
    EXPECT_EQ(path.back().rfind("memcpy", 0), 0u) << path.back();
  }
  EXPECT_GT(compile, 0);
  EXPECT_NE(replay.sink.Find(kLine, {"[compile]", "jit_train_step"}), 0u);
  double copies = 0;
  for (const auto& [path, t] : elsewhere) copies += t;
  EXPECT_DOUBLE_EQ(total + copies, replay.sink.Total(GpuMetric::kGpuTime).sum);
  EXPECT_LT(copies, 0.001 * total);
}

#ifdef XLA_TEST_HAVE_CUPTI
// The attention training step of bench/workloads/jax_models.py: its cuBLAS
// GEMMs are traced into the command buffer (stream capture inside each
// custom-call's range, then a child graph node), and their records carry
// node ids of the executable graph's child graphs, which CUPTI never
// announces. Linked at instantiation, they land under their custom-call.
TEST(XlaFixtureReplay, TracedCommandsOfACommandBufferLandUnderTheirHloOperations) {
  const auto events = ReadFixture("attention_step.jsonl.gz");
  ASSERT_GT(events.size(), 5000u);
  Replay replay(events, PythonThread(events));
  // 77 child graph nodes: a GEMM each, 24 of them with a memset first.
  EXPECT_EQ(replay.linked_child_nodes, 101u);
  // Time left below the graph launch (no operation), and the GEMMs' time
  // below an instruction: custom-call.N or cublas-lt-matmul.N, then the
  // capturing cuLaunchKernelEx.
  std::map<std::vector<std::string>, double> elsewhere;
  double unplaced = 0, gemms_under_op = 0;
  for (const auto& [path, t] : replay.TimeUnderLine(&elsewhere)) {
    if (Contains(path, "cuGraphLaunch")) unplaced += t;
    if (path.size() < 3 || path[0] == "[compile]" ||
        path.back().rfind("sm90_xmma_gemm", 0) != 0) {
      continue;
    }
    const std::string& instruction = path[path.size() - 3];
    if (instruction.rfind("custom-call.", 0) == 0 ||
        instruction.rfind("cublas-lt-matmul.", 0) == 0) {
      gemms_under_op += t;
    }
  }
  double graph_gemms = 0;
  for (const json& k : replay.kernels) {
    if (k["graph"] == 0 || k["name"].get<std::string>().rfind("sm90_xmma_gemm", 0) != 0) continue;
    graph_gemms += static_cast<double>(k["end"].get<uint64_t>() - k["start"].get<uint64_t>());
  }
  ASSERT_GT(graph_gemms, 0);
  EXPECT_EQ(unplaced, 0);
  EXPECT_DOUBLE_EQ(gemms_under_op, graph_gemms);
}

// The attention step's later calls from another line: its recorded nodes
// and the traced GEMMs linked into child graphs follow the launching call.
TEST(XlaFixtureReplay, TracedCommandsOfReplaysLandUnderTheCallThatLaunchedThem) {
  const auto events = ReadFixture("attention_step.jsonl.gz");
  const uint64_t python = PythonThread(events);
  Replay replay(events, python, "", {"jit_step", 2});
  const std::vector<uint64_t> launches = GraphLaunches(events, python);
  ASSERT_EQ(launches.size(), 5u);
  const double loop_graph_time =
      GraphTimeOf(events, std::vector<uint64_t>(launches.begin() + 1, launches.end()));
  std::map<std::vector<std::string>, double> elsewhere;
  double loop_time = 0, gemms_under_op = 0;
  for (const auto& [path, t] : replay.TimeUnderLine(&elsewhere, kLoopLine)) {
    EXPECT_FALSE(Contains(path, "cuGraphLaunch")) << path.back();
    loop_time += t;
    if (path.size() < 3 || path.back().rfind("sm90_xmma_gemm", 0) != 0) continue;
    const std::string& instruction = path[path.size() - 3];
    EXPECT_TRUE(instruction.rfind("custom-call.", 0) == 0 ||
                instruction.rfind("cublas-lt-matmul.", 0) == 0)
        << instruction;
    gemms_under_op += t;
  }
  ASSERT_GT(loop_graph_time, 0);
  EXPECT_DOUBLE_EQ(loop_time, loop_graph_time);
  // 4 launches of 77 traced GEMMs each.
  double loop_gemms = 0;
  size_t gemm_records = 0;
  for (const json& k : replay.kernels) {
    if (k["graph"] == 0 || k["name"].get<std::string>().rfind("sm90_xmma_gemm", 0) != 0 ||
        k["corr"] == launches[0]) {
      continue;
    }
    loop_gemms += static_cast<double>(k["end"].get<uint64_t>() - k["start"].get<uint64_t>());
    ++gemm_records;
  }
  EXPECT_EQ(gemm_records, 4u * 77u);
  EXPECT_DOUBLE_EQ(gemms_under_op, loop_gemms);
}
#endif

}  // namespace
}  // namespace deepcontext::xla
