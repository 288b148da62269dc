#include "runtime/cupti/backend_lifecycle.h"

namespace deepcontext::cupti {

bool IsLegalTransition(BackendLifecycle from, BackendLifecycle to) {
  using L = BackendLifecycle;
  switch (from) {
    case L::kIdle:
      return to == L::kStarting || to == L::kStopped;
    case L::kStarting:
      return to == L::kTracing || to == L::kStopped;
    case L::kTracing:
      return to == L::kPaused || to == L::kStopped;
    case L::kPaused:
      return to == L::kTracing || to == L::kDetached || to == L::kEnded ||
             to == L::kStopped;
    case L::kDetached:
      return to == L::kTracing || to == L::kEnded || to == L::kReleased;
    case L::kEnded:
    case L::kStopped:
      return to == L::kReleased;
    case L::kReleased:
      return false;
  }
  return false;
}

std::string_view LifecycleName(BackendLifecycle state) {
  switch (state) {
    case BackendLifecycle::kIdle:
      return "idle";
    case BackendLifecycle::kStarting:
      return "starting";
    case BackendLifecycle::kTracing:
      return "tracing";
    case BackendLifecycle::kPaused:
      return "paused";
    case BackendLifecycle::kDetached:
      return "detached";
    case BackendLifecycle::kEnded:
      return "ended";
    case BackendLifecycle::kStopped:
      return "stopped";
    case BackendLifecycle::kReleased:
      return "released";
  }
  return "unknown";
}

}  // namespace deepcontext::cupti
