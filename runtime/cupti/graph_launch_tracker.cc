#include "runtime/cupti/graph_launch_tracker.h"

#include <algorithm>

#include "runtime/cupti/cupti_functions.h"

namespace deepcontext::cupti {
namespace {

template <typename Handle>
uint64_t Key(Handle handle) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
}

}  // namespace

GraphLaunchTracker::GraphLaunchTracker(const CudaDriver& driver,
                                       size_t max_graphs)
    : driver_(driver), max_graphs_(std::max<size_t>(max_graphs, 1)) {}

bool GraphLaunchTracker::OnResource(uint32_t cbid, const void* graph_data,
                                    const TracedActivity& traced) {
  if (cbid != CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED &&
      cbid != CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING) {
    return false;
  }
  const auto* graph = static_cast<const CUpti_GraphData*>(graph_data);
  if (graph == nullptr || graph->graphExec == nullptr) return true;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING) {
    Forget(Key(graph->graphExec));
    return true;
  }
  // The source graph may change or go away after instantiation, so its
  // nodes are counted now.
  Set(Key(graph->graphExec),
      graph->graph != nullptr ? driver_.GraphRecords(graph->graph, traced) : 0);
  return true;
}

void GraphLaunchTracker::OnNodeSetEnabled(uint32_t cbid, const void* params) {
  if (cbid != CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled || params == nullptr) {
    return;
  }
  const auto& call = *static_cast<const cuGraphNodeSetEnabled_params*>(params);
  // A disabled node runs as an empty one. Whether a re-enabled node was
  // disabled before is not tracked, so the count stays unknown until the
  // graph is instantiated again.
  if (call.isEnabled == 0) Forget(Key(call.hGraphExec));
}

uint64_t GraphExecOfLaunch(uint32_t cbid, const void* params) {
  if (params == nullptr) return 0;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
      return Key(static_cast<const cuGraphLaunch_params*>(params)->hGraph);
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      return Key(static_cast<const cuGraphLaunch_ptsz_params*>(params)->hGraphExec);
    default:
      return 0;
  }
}

uint32_t GraphLaunchTracker::LaunchRecords(uint32_t cbid,
                                           const void* params) const {
  const uint64_t exec = GraphExecOfLaunch(cbid, params);
  if (exec == 0) return 0;
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = graphs_.find(exec);
  return it != graphs_.end() ? it->second.records : 0;
}

void GraphLaunchTracker::Set(uint64_t graph_exec, uint32_t records) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (records == 0) {
    graphs_.erase(graph_exec);
    return;
  }
  if (graphs_.size() >= max_graphs_ && graphs_.count(graph_exec) == 0) {
    // Instantiation is rare (graphs are built to be replayed), so a linear
    // scan for the oldest costs less than keeping an order index.
    graphs_.erase(std::min_element(
        graphs_.begin(), graphs_.end(), [](const auto& a, const auto& b) {
          return a.second.sequence < b.second.sequence;
        }));
  }
  graphs_[graph_exec] = Entry{records, next_sequence_++};
}

void GraphLaunchTracker::Forget(uint64_t graph_exec) {
  std::lock_guard<std::mutex> guard(mutex_);
  graphs_.erase(graph_exec);
}

size_t GraphLaunchTracker::size() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return graphs_.size();
}

}  // namespace deepcontext::cupti
