// Where the kernels of a CUDA graph were captured, for GPU instruction
// samples (pc_sampling.h). A sample carries only a correlation id and a
// kernel name; for a kernel replayed from a graph the id is the graph
// launch's, shared by every kernel of the graph. Its activity record, in
// contrast, names its graph node and lands on the calling context where the
// node was captured (gpu_attribution.h). To put samples beside their
// records, this keeps per graph the captured kernels' names and capture
// sites, snapshots them when the graph is instantiated (the source graph
// may change or go away afterwards), and hands the executable graph's
// table to each of its launches.
//
// A name captured at two different sites in one graph cannot tell which
// node a sample ran in: such a name is marked, and its samples stay under
// the launch. Keys are the driver's handles as integers (no vendor
// headers); callers decode CUPTI's callback data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "runtime/gpu/context_sink.h"

namespace deepcontext::cupti {

// The call that captured a graph's kernel: its calling context and API
// name (e.g. "cuLaunchKernel"), as its activity records are attributed.
struct CaptureSite {
  gpu::ContextId context = 0;
  std::string api;
  // The graph captured this kernel name at more than one site.
  bool several_sites = false;
};

struct SiteNameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
// Kernel name (mangled, as CUPTI names it) -> where it was captured.
using GraphKernelTable =
    std::unordered_map<std::string, CaptureSite, SiteNameHash, std::equal_to<>>;

// The capture site of kernel `name` in `table`; null when the name is not
// in it or was captured at several sites.
const CaptureSite* UniqueSite(const GraphKernelTable& table, std::string_view name);

class GraphKernelSites {
 public:
  // At most `max_graphs` graphs and as many executable graphs are kept;
  // beyond, the oldest is dropped and its samples stay under the launch.
  explicit GraphKernelSites(size_t max_graphs = 16384);

  // A kernel node was added to `graph` inside the call `api` made in
  // `context` (stream capture). [the capturing thread]
  void OnKernelCaptured(uint64_t graph, std::string_view kernel, gpu::ContextId context,
                        std::string_view api);
  // cuGraphClone: the clone has the original's kernels.
  void OnGraphCloned(uint64_t clone, uint64_t original);
  void OnGraphDestroyed(uint64_t graph);
  // `graph` was instantiated as `exec`: later launches of `exec` get the
  // graph's kernels as they are now.
  void OnExecCreated(uint64_t exec, uint64_t graph);
  void OnExecDestroyed(uint64_t exec);
  // The table of an executable graph's launch; null when unknown (e.g. a
  // graph instantiated before profiling started, or built without capture).
  // [application threads, at each graph launch: one lookup]
  std::shared_ptr<const GraphKernelTable> ForLaunch(uint64_t exec) const;

  size_t graphs() const;
  size_t execs() const;

 private:
  template <typename Value>
  struct Aged {
    Value value;
    uint64_t sequence = 0;  // insertion order, for eviction
  };
  template <typename Map>
  void MakeRoom(Map& map, uint64_t key);

  const size_t max_graphs_;
  mutable std::mutex mutex_;  // guards everything below
  std::unordered_map<uint64_t, Aged<GraphKernelTable>> graphs_;
  std::unordered_map<uint64_t, Aged<std::shared_ptr<const GraphKernelTable>>> execs_;
  uint64_t next_sequence_ = 0;
};

}  // namespace deepcontext::cupti
