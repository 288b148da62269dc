// The GPU backend's lifecycle as one state. Which CUPTI calls are allowed
// depends on it (none while CUPTI is detached or left to another client),
// so it lives in one place and changes only along the transitions below,
// instead of in flags that could contradict each other. No vendor headers.
//
//   kIdle --Start: DLMonitor up--> kStarting --attached--> kTracing
//   kTracing --pause (SetTracing(false))--> kPaused
//   kPaused --resume, CUPTI still attached--> kTracing
//   kPaused --resume or stop finds that a call detached CUPTI--> kDetached
//   kPaused --a detach under way did not finish in time--> kEnded
//   kDetached --attached again at the next window--> kTracing
//   kDetached --attaching again failed--> kEnded
//   kIdle, kStarting, kTracing, kPaused --Stop--> kStopped
//   kDetached, kEnded --Stop--> kReleased
//   kStopped --Detach: cuptiFinalize--> kReleased
//
// A failed Start leaves kStarting; the caller then stops. Requests that
// fit no transition (a pause before Start, a resume after Stop, Start
// twice) change nothing.
#pragma once

#include <cstdint>
#include <string_view>

namespace deepcontext::cupti {

enum class BackendLifecycle : uint8_t {
  kIdle,      // made, not started: no CUPTI call made yet
  kStarting,  // DLMonitor initialized; subscribing and enabling
  kTracing,   // subscribed, callbacks and activity kinds on
  kPaused,    // between trace windows: callbacks and kinds off, CUPTI
              // attached (a detach may have been asked for, window_detach.h)
  kDetached,  // a pause detached CUPTI: no CUPTI call until attached again
  kEnded,     // GPU tracing ended at a window (a detach stuck, attaching
              // again failed): no CUPTI call any more
  kStopped,   // stopped, CUPTI still in the process; Metadata() answers
  kReleased,  // stopped, and CUPTI detached or left to another client:
              // no CUPTI call any more
};

// Whether the backend may go from `from` to `to` (the table above).
bool IsLegalTransition(BackendLifecycle from, BackendLifecycle to);

// "idle", "starting", "tracing", "paused", "detached", "ended", "stopped",
// "released".
std::string_view LifecycleName(BackendLifecycle state);

}  // namespace deepcontext::cupti
