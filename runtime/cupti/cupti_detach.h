// Whether the backend detaches CUPTI from the process (cuptiFinalize) when
// it stops. Unsubscribing alone leaves CUPTI in the driver's launch path:
// every later kernel launch keeps paying for tracing that has ended, so a
// program that profiles a few steps and trains on would run slower for the
// rest of its life (bench/gpu_launch_cost: its "after unsubscribe only" row
// against "none"). Detaching is safe from CUDA 12.6 on; before, attaching
// again after a detach could crash with CUDA graphs.
#pragma once

#include <cstdint>
#include <string>

namespace deepcontext::cupti {

// The oldest CUPTI API version that detaches safely (CUDA 12.6).
constexpr uint32_t kFirstSafeDetachVersion = 24;

struct DetachInput {
  // cuptiGetVersion() of the loaded library.
  uint32_t cupti_api_version = 0;
  // $DEEPCONTEXT_CUPTI_DETACH; nullptr when unset. "0" keeps CUPTI attached.
  const char* setting = nullptr;
  // The backend held the CUPTI subscription (no other client did).
  bool subscribed = false;
  // Launches whose records never came: another client took the activity
  // buffers, and detaching would end its tracing too.
  uint64_t launches_without_records = 0;
  // Stopping waited for the work of every device (or is still to come):
  // detaching with kernels in flight could leave them writing their
  // timestamps into memory CUPTI has freed.
  bool gpu_idle = true;
};

// "" when CUPTI should be detached at stop, otherwise why not.
std::string DetachRefusal(const DetachInput& input);

// The profile's "gpu_cupti_detach" metadata: what stopping does.
std::string DetachDescription(const DetachInput& input);

}  // namespace deepcontext::cupti
