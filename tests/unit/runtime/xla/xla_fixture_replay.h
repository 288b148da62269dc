// Replays what a JAX 0.11.2 training step showed a CUPTI client on an H200
// (tests/gpu/jax_probe/: NVTX ranges, driver calls, graph node events and
// activity records, each on its recorded thread) through XlaRanges and
// GpuAttribution, the way the CUPTI backend feeds them, so that tests can
// check where the GPU time lands.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/gpu/gpu_attribution.h"
#include "runtime/xla/xla_ranges.h"
#include "tests/unit/runtime/gpu/fake_context_sink.h"
#ifdef XLA_TEST_HAVE_CUPTI
#include "runtime/cupti/graph_child_nodes.h"
#endif

namespace deepcontext::xla::replay {

using gpu::ContextId;
using nlohmann::json;

constexpr ContextId kLine = 2;  // the Python thread's line
// The line of the later calls, when a replay moves them (a training loop
// calling the function whose first call recorded its command buffer).
constexpr ContextId kLoopLine = 3;
constexpr ContextId kFirstWorker = 100;  // other threads' own nodes

// The events of a gzipped JSON-lines fixture under XLA_FIXTURE_DIR.
std::vector<json> ReadFixture(const std::string& name);

// The thread that created XLA's NVTX domain: the Python main thread.
uint64_t PythonThread(const std::vector<json>& events);

bool Contains(const std::vector<std::string>& path, const std::string& name);

// Total time (ns) of the kernel records, or of those launched in graphs.
double KernelTime(const std::vector<json>& kernels, bool graphs_only);

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

// The calls of a module: from the run of `module` numbered `from` (1 is the
// first, which compiles and records the command buffer), the Python thread
// calls from kLoopLine instead of kLine.
struct LoopCalls {
  std::string module;
  int from = 0;
};

// One replay of a fixture's events, done by the constructor.
class Replay {
 public:
  Replay(const std::vector<json>& events, uint64_t python_thread,
         const std::string& hlo_text = "", LoopCalls loop = {});

  // GPU time (ns) by path below the Python line, and elsewhere.
  std::map<std::vector<std::string>, double> TimeUnderLine(
      std::map<std::vector<std::string>, double>* elsewhere, ContextId line = kLine) const;

  gpu::FakeContextSink sink;
  // Kernel records by graph node and name, for the checks.
  std::vector<json> kernels;
  size_t linked_child_nodes = 0;

 private:
  void FollowCalls(const json& e);
  void OnThread(uint64_t tid, const json& e);
  void LinkChildGraphNodes(const json& e);
  void Record(const json& e);
  // Names from the test-owned context down to `id`, and that context.
  std::pair<ContextId, std::vector<std::string>> PathOf(ContextId id) const;

  HloSourceRegistry sources_;
  XlaRanges ranges_;
  gpu::GpuAttribution attribution_{sink};
  std::map<uint64_t, std::unique_ptr<RecordedThread>> threads_;
  std::map<uint64_t, ContextId> base_;  // recorded thread -> its context
  std::map<uint64_t, std::pair<ContextId, std::string>> call_;  // thread -> current call
  const uint64_t python_thread_;
  const LoopCalls loop_;
  std::map<uint64_t, std::string> strings_;
  int depth_ = 0;
  int module_runs_ = 0;
#ifdef XLA_TEST_HAVE_CUPTI
  cupti::AnnouncedClones clones_;  // one recorded thread instantiates
#endif
};

}  // namespace deepcontext::xla::replay
