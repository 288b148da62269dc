// A PyTorch RecordFunction callback that does nothing, registered like the
// runtime's adapter (same scopes, ids on, no inputs): what observing every
// op costs inside torch itself, which no profiler built on RecordFunction
// can go below. Built and loaded by record_function_floor.py.
#include <ATen/record_function.h>

#include <memory>

namespace {

at::CallbackHandle g_handle = 0;

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction&) {
  return nullptr;
}

void OnEnd(const at::RecordFunction&, at::ObserverContext*) {}

}  // namespace

extern "C" {

// Registers the callback, disabled. Returns 0, or -1 if torch refused.
__attribute__((visibility("default"))) int floor_install() {
  try {
    g_handle = at::addGlobalCallback(
        at::RecordFunctionCallback(&OnStart, &OnEnd)
            .needsInputs(false)
            .needsIds(true)
            .scopes({at::RecordScope::FUNCTION,
                     at::RecordScope::BACKWARD_FUNCTION,
                     at::RecordScope::USER_SCOPE}));
    at::disableCallback(g_handle);
    return 0;
  } catch (...) {
    return -1;
  }
}

__attribute__((visibility("default"))) int floor_enable(int on) {
  try {
    if (on) {
      at::reenableCallback(g_handle);
    } else {
      at::disableCallback(g_handle);
    }
    return 0;
  } catch (...) {
    return -1;
  }
}

}  // extern "C"
