// A replayed CUPTI range profiler and profiler host API for the hardware
// counter tests: per kernel name, the metric values one range gives, loaded
// from metric values measured on an H200 (fixtures/gpu_metrics_h200.txt).
// The fake records the calls made to it, so tests can check their order.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/cupti/gpu_metrics_functions.h"

namespace deepcontext::cupti {

// What the fake answers with, and the calls it was made.
struct FakeRangeProfiler {
  std::map<std::string, std::map<std::string, double>> kernels;  // from the fixture
  std::vector<std::string> calls;
  std::vector<std::string> added;  // metrics the current host object took
  bool host_refusing = false;       // it refused one: it refuses all
  std::string chip = "GH100";
  std::string running;           // the kernel the next range measures
  size_t ranges = 1;             // ranges the next decode yields
  CUptiResult availability_result = CUPTI_SUCCESS;
  bool capturing = false;
  bool started = false;
  CUpti_RangeProfiler_SetConfig_Params config{};
};

// The fake the functions of FakeFunctions() answer for; one at a time (null
// when none).
void InstallFakeRangeProfiler(FakeRangeProfiler* fake);
// The fixture's chip and metric values into `fake`.
void LoadMetricsFixture(FakeRangeProfiler& fake);
// The range profiler's and profiler host's entry points, answered by the
// installed fake.
GpuMetricsFunctions FakeFunctions();

}  // namespace deepcontext::cupti
