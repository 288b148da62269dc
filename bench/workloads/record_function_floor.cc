// A PyTorch RecordFunction callback that does nothing, registered like the
// runtime's adapter (same scopes, no ids, no inputs): what observing every
// op costs inside torch itself, which no profiler built on RecordFunction
// can go below. A second one asks for ids (needsIds), as profilers that pair
// an op's start and end through RecordFunction's handle do, and the runtime
// did before it paired them by address: what the handle costs. Built and
// loaded by record_function_floor.py.
#include <ATen/record_function.h>

#include <memory>

namespace {

// [0]: without ids, [1]: with ids.
at::CallbackHandle g_handles[2] = {0, 0};

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction&) {
  return nullptr;
}

void OnEnd(const at::RecordFunction&, at::ObserverContext*) {}

}  // namespace

extern "C" {

// Registers both callbacks, disabled. Returns 0, or -1 if torch refused.
__attribute__((visibility("default"))) int floor_install() {
  try {
    for (int ids = 0; ids < 2; ++ids) {
      g_handles[ids] = at::addGlobalCallback(
          at::RecordFunctionCallback(&OnStart, &OnEnd)
              .needsInputs(false)
              .needsIds(ids == 1)
              .scopes({at::RecordScope::FUNCTION,
                       at::RecordScope::BACKWARD_FUNCTION,
                       at::RecordScope::USER_SCOPE}));
      at::disableCallback(g_handles[ids]);
    }
    return 0;
  } catch (...) {
    return -1;
  }
}

// Turns the callback with (`ids` 1) or without ids (0) on or off.
__attribute__((visibility("default"))) int floor_enable(int on, int ids) {
  try {
    if (on) {
      at::reenableCallback(g_handles[ids != 0]);
    } else {
      at::disableCallback(g_handles[ids != 0]);
    }
    return 0;
  } catch (...) {
    return -1;
  }
}

}  // extern "C"
