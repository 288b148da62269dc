// CUPTI configured piece by piece, with callbacks that do nothing and
// activity buffers that are thrown away: what CUPTI itself costs a traced
// program, apart from any profiler's work. Used by gpu_launch_cost (per
// launch) and cupti_floor (per training step, from Python).
#pragma once

#include <cupti.h>

#include <vector>

#include "runtime/cupti/cupti_functions.h"

namespace deepcontext::bench {

// What one configuration asks CUPTI for.
struct CuptiPieces {
  bool launch_callbacks = false;    // on cuLaunchKernel(_ptsz) only
  bool traced_callbacks = false;    // on every function the runtime traces
  bool resource_callbacks = false;  // the runtime's graph callbacks
  std::vector<CUpti_ActivityKind> kinds;
};

// Callbacks on the launch functions and/or kernel activity records.
CuptiPieces LaunchPieces(bool callbacks, bool activity);

// CUPTI as the runtime configures it (runtime/cupti/gpu_backend_state.cc):
// its activity kinds and, with `callbacks`, the driver and resource
// callbacks it enables.
CuptiPieces DeepContextPieces(bool callbacks = true);

// CUPTI set up as one configuration asks, and torn down again (detached
// with cuptiFinalize unless `detach` is false).
class CuptiSetup {
 public:
  CuptiSetup(const cupti::CuptiFunctions& f, const CuptiPieces& pieces,
             bool detach = true);
  CuptiSetup(const cupti::CuptiFunctions& f, bool callbacks, bool activity,
             bool detach = true)
      : CuptiSetup(f, LaunchPieces(callbacks, activity), detach) {}
  ~CuptiSetup();
  CuptiSetup(const CuptiSetup&) = delete;
  CuptiSetup& operator=(const CuptiSetup&) = delete;

  bool ok() const { return ok_; }

 private:
  const cupti::CuptiFunctions& f_;
  bool detach_;
  std::vector<CUpti_ActivityKind> kinds_;
  bool ok_ = true;
  CUpti_SubscriberHandle subscriber_ = nullptr;
};

}  // namespace deepcontext::bench
