// Fixture for check_layering.cmake: a backend reaching up to the profiler.
#include "runtime/gpu/gpu_records.h"
#include "runtime/profiler/metric_store.h"
