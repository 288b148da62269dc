// CUPTI as the runtime configures it, with callbacks that do nothing and
// records that are thrown away: the floor of any CUPTI-based tracer of every
// kernel, timed per training step from Python (bench/workloads/cupti_floor.py,
// the --ab-variants cupti-* of gpu_models.py).
#include <memory>

#include "bench/cupti_setup.h"
#include "runtime/cupti/cupti_loader.h"

namespace {

std::unique_ptr<deepcontext::bench::CuptiSetup> g_setup;

}  // namespace

extern "C" {

// Starts tracing: activity records only (callbacks == 0), or with the
// runtime's driver and resource callbacks too. Returns 0, 1 when CUPTI
// cannot be loaded, 2 when it refused a piece, 3 when already started.
__attribute__((visibility("default"))) int cupti_floor_start(int callbacks) {
  if (g_setup != nullptr) return 3;
  const auto& library = deepcontext::cupti::CuptiLibrary::Get();
  if (!library.available()) return 1;
  g_setup = std::make_unique<deepcontext::bench::CuptiSetup>(
      *library.functions(), deepcontext::bench::DeepContextPieces(callbacks != 0));
  if (!g_setup->ok()) {
    g_setup.reset();
    return 2;
  }
  return 0;
}

// Stops tracing and detaches CUPTI, as the runtime does when it stops.
__attribute__((visibility("default"))) void cupti_floor_stop() { g_setup.reset(); }

}  // extern "C"
