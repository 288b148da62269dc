#include "runtime/profiler/op_metrics.h"

#include <vector>

#include "runtime/common/thread_instance.h"
#include "runtime/cpu/clocks.h"

namespace deepcontext::profiler {
namespace {

// Timer stacks are per thread, shared by all OpMetrics objects; a unique
// generation tells a stack that belongs to another object or to the
// parent of a fork.
std::atomic<uint64_t> g_next_generation{1};

// cpu_start of an op timed without CPU time.
constexpr int64_t kNoCpuTime = -1;

struct OpenOp {
  uint64_t op_id;
  int64_t cpu_start;
  int64_t wall_start;
  int64_t child_cpu = 0;
  int64_t child_wall = 0;
};

struct TimerStack {
  uint64_t generation = 0;
  std::vector<OpenOp> ops;
};

// The calling thread's stack; nullptr while the thread is exiting.
TimerStack* Stack(uint64_t generation) {
  TimerStack* stack = ThreadInstance<TimerStack>();
  if (stack != nullptr && stack->generation != generation) {
    stack->ops.clear();
    stack->generation = generation;
  }
  return stack;
}

}  // namespace

OpMetrics::OpMetrics(MetricStore& store)
    : store_(store),
      calls_(store.Register("calls", "count", "number of calls")),
      cpu_time_(store.Register("cpu_time", "ns",
                               "thread CPU time spent in the op itself")),
      wall_time_(store.Register("wall_time", "ns",
                                "wall time spent in the op itself")),
      generation_(g_next_generation.fetch_add(1)) {}

void OpMetrics::ResetAfterFork() {
  generation_.store(g_next_generation.fetch_add(1), std::memory_order_relaxed);
}

void OpMetrics::OnEvent(const dlmonitor_event_t* event, void* user_data) {
  auto* self = static_cast<OpMetrics*>(user_data);
  // Ops are timed even without a context yet (an engine wrapper learns its
  // context from the backward function it runs); the EXIT event carries the
  // final context.
  if (event->domain != DLMONITOR_DOMAIN_FRAMEWORK_OP || event->op == nullptr) {
    return;
  }
  if (event->phase == DLMONITOR_PHASE_ENTER) {
    self->Enter(*event);
  } else if (event->phase == DLMONITOR_PHASE_EXIT) {
    self->Exit(*event);
  }
}

void OpMetrics::Enter(const dlmonitor_event_t& event) {
  TimerStack* thread = Stack(generation_.load(std::memory_order_relaxed));
  if (thread == nullptr) return;
  TimerStack& stack = *thread;
  // Read the clocks last so that our own bookkeeping is not charged to the op.
  OpenOp open{event.op->op_id, 0, 0};
  stack.ops.push_back(open);
  stack.ops.back().wall_start = cpu::MonotonicNs();
  stack.ops.back().cpu_start = cpu_time_on_.load(std::memory_order_relaxed)
                                   ? cpu::ThreadCpuTimeNs()
                                   : kNoCpuTime;
}

void OpMetrics::Exit(const dlmonitor_event_t& event) {
  const int64_t wall_end = cpu::MonotonicNs();
  TimerStack* thread = Stack(generation_.load(std::memory_order_relaxed));
  if (thread == nullptr) return;
  TimerStack& stack = *thread;
  // Find the op; ops above it whose exit never came are dropped unrecorded.
  size_t i = stack.ops.size();
  while (i > 0 && stack.ops[i - 1].op_id != event.op->op_id) --i;
  if (i == 0) return;
  const OpenOp op = stack.ops[i - 1];
  stack.ops.resize(i - 1);
  const bool with_cpu = op.cpu_start != kNoCpuTime;
  const int64_t cpu_end = with_cpu ? cpu::ThreadCpuTimeNs() : 0;

  const int64_t cpu_total = with_cpu ? cpu_end - op.cpu_start : 0;
  const int64_t wall_total = wall_end - op.wall_start;
  const int64_t cpu_self = cpu_total - op.child_cpu;
  const int64_t wall_self = wall_total - op.child_wall;
  if (event.context != 0) {
    // An engine wrapper is charged to its [backward] phase node; counting
    // it as a call there would read as a call of the phase.
    const double cpu = static_cast<double>(cpu_self > 0 ? cpu_self : 0);
    const double wall = static_cast<double>(wall_self > 0 ? wall_self : 0);
    const bool call = event.op->kind != DLMONITOR_OP_BACKWARD_WRAPPER;
    if (call && with_cpu) {
      store_.Add(event.context, {{calls_, 1}, {cpu_time_, cpu}, {wall_time_, wall}});
    } else if (call) {
      store_.Add(event.context, {{calls_, 1}, {wall_time_, wall}});
    } else if (with_cpu) {
      store_.Add(event.context, {{cpu_time_, cpu}, {wall_time_, wall}});
    } else {
      store_.Add(event.context, wall_time_, wall);
    }
  }
  if (!stack.ops.empty()) {
    stack.ops.back().child_cpu += cpu_total;
    stack.ops.back().child_wall += wall_total;
  }
}

}  // namespace deepcontext::profiler
