// Knows how many activity records each executable CUDA graph produces per
// launch, so that a cuGraphLaunch can expect an exact count and be released
// as soon as its last record arrived. Fed by CUPTI's callbacks: graph
// instantiation (the source graph's nodes are counted through the driver),
// destruction, and cuGraphNodeSetEnabled. No vendor headers: CUPTI's
// callback data is passed through untyped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "runtime/cupti/cuda_driver.h"
#include "runtime/cupti/driver_api.h"

namespace deepcontext::cupti {

// The executable graph a graph launch (driver callback id `cbid`, `params`
// its functionParams) runs, as an integer; 0 for other calls and launch
// variants whose parameters this code does not know.
uint64_t GraphExecOfLaunch(uint32_t cbid, const void* params);

class GraphLaunchTracker {
 public:
  // `driver` must outlive the tracker. At most `max_graphs` executable
  // graphs are remembered (beyond, the oldest is dropped and its launches
  // fall back to an unknown count).
  explicit GraphLaunchTracker(const CudaDriver& driver,
                              size_t max_graphs = 16384);
  GraphLaunchTracker(const GraphLaunchTracker&) = delete;
  GraphLaunchTracker& operator=(const GraphLaunchTracker&) = delete;

  // A resource callback (CUPTI_CB_DOMAIN_RESOURCE id `cbid`, `graph_data`
  // the CUpti_GraphData). Handles GRAPHEXEC_CREATED and
  // GRAPHEXEC_DESTROY_STARTING and returns true for them; false for other
  // ids. [the instantiating thread, inside the callback]
  bool OnResource(uint32_t cbid, const void* graph_data,
                  const TracedActivity& traced);
  // The entry of a cuGraphNodeSetEnabled call (`params`: its
  // functionParams). [any thread]
  void OnNodeSetEnabled(uint32_t cbid, const void* params);
  // Records one graph launch produces (driver callback id `cbid`,
  // `params` its functionParams); 0 when unknown: a graph instantiated
  // before the backend started, one whose count could not be known, or a
  // launch variant whose parameters this code does not know. [any thread]
  uint32_t LaunchRecords(uint32_t cbid, const void* params) const;

  size_t size() const;

 private:
  struct Entry {
    uint32_t records = 0;
    uint64_t sequence = 0;  // instantiation order, for eviction
  };
  void Set(uint64_t graph_exec, uint32_t records);
  void Forget(uint64_t graph_exec);

  const CudaDriver& driver_;
  const size_t max_graphs_;
  mutable std::mutex mutex_;  // guards everything below
  // CUgraphExec value -> records per launch; only known counts (> 0).
  std::unordered_map<uint64_t, Entry> graphs_;
  uint64_t next_sequence_ = 0;
};

}  // namespace deepcontext::cupti
