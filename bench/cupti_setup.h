// CUPTI configured piece by piece, with callbacks that do nothing and
// activity buffers that are thrown away: what CUPTI itself costs a traced
// program, apart from any profiler's work. Used by gpu_launch_cost (per
// launch) and cupti_floor (per training step, from Python).
#pragma once

#include <cupti.h>

#include <vector>

#include "runtime/cupti/cupti_functions.h"

namespace deepcontext::bench {

// An activity attribute set before the activity callbacks are registered,
// and set to `restore` (CUPTI's documented default) at teardown, so that
// later configurations of one process start from the defaults.
struct ActivityAttribute {
  CUpti_ActivityAttribute attribute;
  size_t value;
  size_t restore;
  size_t bytes;  // sizeof the attribute's type: 1 (uint8_t) or sizeof(size_t)
};

// What one configuration asks CUPTI for.
struct CuptiPieces {
  bool launch_callbacks = false;    // on cuLaunchKernel(_ptsz) only
  bool traced_callbacks = false;    // on every function the runtime traces
  bool resource_callbacks = false;  // the runtime's graph callbacks
  std::vector<CUpti_ActivityKind> kinds;
  std::vector<ActivityAttribute> attributes;
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
  bool SetAttribute(CUpti_ActivityAttribute attribute, size_t value, size_t bytes);

  const cupti::CuptiFunctions& f_;
  bool detach_;
  std::vector<CUpti_ActivityKind> kinds_;
  std::vector<ActivityAttribute> attributes_;
  bool ok_ = true;
  CUpti_SubscriberHandle subscriber_ = nullptr;
};

}  // namespace deepcontext::bench
