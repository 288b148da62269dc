// The op loop of bench/python_op_cost.py, loaded with ctypes into a Python
// process: framework ops reported through the DLMonitor ABI while Python
// frames are on the thread's stack, as torch reports them below a
// model's Python code, with GPU API calls inside them asking for their
// context as the CUPTI callback of a launch does.
#include <time.h>

#include <cstdint>

#include "deepcontext/dlmonitor.h"
#include "tests/unit/runtime/emit_op.h"

namespace {

using deepcontext::testing::EmitOp;

constexpr const char* kOpNames[] = {"aten::linear", "aten::relu", "aten::add",
                                    "aten::empty"};
constexpr const char* kNestedNames[] = {"aten::addmm", "aten::clamp_min",
                                        "aten::add_", "aten::empty_strided"};

struct Loop {
  int ops;
  int nested;     // ops inside each op (a composite op's implementation)
  int gpu_calls;  // GPU API calls inside the innermost op
  int gpu_depth;  // frames between an op and its GPU API calls
};

// Every level keeps its frame, as a dispatcher's and a driver's do.
template <typename Body>
__attribute__((noinline)) void AtDepth(int depth, const Body& body) {
  if (depth <= 0) {
    body();
  } else {
    AtDepth(depth - 1, body);
  }
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void GpuApiCall() {
  dlmonitor_context_t context = 0;
  dlmonitor_context_current(&context);
  asm volatile("" ::: "memory");
}

// The calling thread's CPU time: other processes on a shared machine do not
// inflate it as they do wall time.
double ThreadCpuNs() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
}

void Inner(const Loop& loop) {
  for (int c = 0; c < loop.gpu_calls; ++c) AtDepth(loop.gpu_depth, GpuApiCall);
}

}  // namespace

// Reports `ops` ops (each with `nested` ops inside it, and `gpu_calls` GPU
// API calls `gpu_depth` frames below the innermost op), `op_depth` native
// frames below the caller. Returns nanoseconds of the thread's CPU time per
// op.
extern "C" __attribute__((visibility("default"))) double python_op_loop_run(
    int ops, int nested, int gpu_calls, int op_depth, int gpu_depth) {
  const Loop loop{ops, nested, gpu_calls, gpu_depth};
  double ns = 0;
  AtDepth(op_depth, [&] {
    uint64_t id = 0;
    const double start = ThreadCpuNs();
    for (int i = 0; i < loop.ops; ++i) {
      const uint64_t outer = ++id;
      EmitOp(kOpNames[i % 4], outer, DLMONITOR_PHASE_ENTER);
      if (loop.nested == 0) Inner(loop);
      for (int n = 0; n < loop.nested; ++n) {
        const uint64_t inner = ++id;
        AtDepth(4, [&] {
          EmitOp(kNestedNames[i % 4], inner, DLMONITOR_PHASE_ENTER);
          Inner(loop);
          EmitOp(kNestedNames[i % 4], inner, DLMONITOR_PHASE_EXIT);
        });
      }
      EmitOp(kOpNames[i % 4], outer, DLMONITOR_PHASE_EXIT);
    }
    ns = (ThreadCpuNs() - start) / loop.ops;
  });
  return ns;
}
