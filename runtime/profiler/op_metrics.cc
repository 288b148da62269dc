#include "runtime/profiler/op_metrics.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include "runtime/common/hot_path.h"
#include "runtime/common/shadow_stack.h"
#include "runtime/common/thread_instance.h"
#include "runtime/cpu/clocks.h"
#include "runtime/cpu/tsc_clock.h"

namespace deepcontext::profiler {
namespace {

// Timer stacks are per thread, shared by all OpMetrics objects; a unique
// generation tells a stack that belongs to another object or to the
// parent of a fork.
std::atomic<uint64_t> g_next_generation{1};

// cpu_start of an op timed without exact CPU time.
constexpr int64_t kNoCpuTime = -1;

// Sampled mode: often enough for per-op detail within a second of CPU, rare
// enough that the sampling thread's cost stays negligible.
constexpr int64_t kSamplingIntervalNs = 1000000;

// $DEEPCONTEXT_CPU_SAMPLE_US (10 us .. 1 s) overrides the interval: longer
// intervals wake the sampling thread less often, shorter ones see shorter
// ops. Read when the sampling thread starts; a bad value is reported once
// and the default kept.
int64_t SamplingIntervalNs() {
  const char* text = std::getenv("DEEPCONTEXT_CPU_SAMPLE_US");
  if (text == nullptr || text[0] == '\0') return kSamplingIntervalNs;
  char* end = nullptr;
  errno = 0;
  const long long us = std::strtoll(text, &end, 10);
  if (errno == 0 && end != text && *end == '\0' && us >= 10 && us <= 1000000) {
    return static_cast<int64_t>(us) * 1000;
  }
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    std::fprintf(stderr,
                 "deepcontext: warning: DEEPCONTEXT_CPU_SAMPLE_US=%s is not a "
                 "whole number of microseconds from 10 to 1000000; sampling "
                 "every %lld us\n",
                 text, static_cast<long long>(kSamplingIntervalNs / 1000));
  }
  return kSamplingIntervalNs;
}

}  // namespace

// A thread's open ops, shared by all OpMetrics objects (see g_next_generation).
struct OpenOp {
  uint64_t op_id = 0;
  int64_t cpu_start = 0;
  int64_t wall_start = 0;  // in wall clock ticks (cpu::TscClock)
  int64_t child_cpu = 0;
  int64_t child_wall = 0;  // ticks
  ContextId context = 0;  // at entry; 0 for an engine wrapper
  uint64_t ends_seen = 0;  // TimerStack::ends_seen at entry

  // The fields Enter does not set, one store each (ShadowStack::Push).
  void Reset() {
    child_cpu = 0;
    child_wall = 0;
  }
};

// What every op reads comes first, on one cache line (64 bytes: the op
// stack's counts are 32-bit, and the sampler's thread entry and the ring
// are raw pointers there, their owners after).
struct alignas(64) TimerStack {
  uint64_t generation = 0;
  ShadowStack<OpenOp> ops;
  // The framework's id of this thread (0 before its first op), and the
  // posts of ends of its ops by other threads it has looked at.
  uint64_t framework_thread = 0;
  uint64_t ends_seen = 0;
  // OpMetrics::sampling_epoch_ when this thread last made sure that the
  // sampler runs.
  uint64_t sampling_epoch = 0;
  // This thread in the CPU sampler, once an op ran here in sampled mode
  // (sampled_owner's), and its finished ops' samples, registered with the
  // OpMetrics of `generation` (ring_owner's): the owners lie past the line.
  CpuSampler::Thread* sampled = nullptr;
  OpSampleRing* ring = nullptr;

  std::shared_ptr<CpuSampler::Thread> sampled_owner;
  std::shared_ptr<OpSampleRing> ring_owner;
  CpuSampler* sampler = nullptr;

  ~TimerStack() {
    if (sampler != nullptr) CpuSampler::UnregisterIfAlive(sampler, sampled_owner);
    if (ring_owner != nullptr) ring_owner->Orphan();
  }
};
static_assert(offsetof(TimerStack, ring) + sizeof(OpSampleRing*) <= 64,
              "the fields every op reads fit one cache line");

namespace {

// Out of line: the op path's code stays small (runtime/common/hot_path.h).
[[gnu::noinline, gnu::cold]] void ResetStack(TimerStack& stack, uint64_t generation) {
  stack.ops.clear();
  stack.generation = generation;
  stack.framework_thread = 0;
  stack.ends_seen = 0;
  stack.sampling_epoch = 0;
  stack.sampler = nullptr;  // after a fork the sampler forgot this thread
  stack.sampled_owner.reset();
  stack.sampled = nullptr;
  // Its samples belong to the previous OpMetrics (or the parent of a fork).
  if (stack.ring_owner != nullptr) stack.ring_owner->Orphan();
  stack.ring_owner.reset();
  stack.ring = nullptr;
}

// The calling thread's stack; nullptr while the thread is exiting.
DEEPCONTEXT_HOT
TimerStack* Stack(uint64_t generation) {
  TimerStack* stack = ThreadInstance<TimerStack>();
  if (stack != nullptr && stack->generation != generation) [[unlikely]] {
    ResetStack(*stack, generation);
  }
  return stack;
}

// The thread node above an op's context: where the sampler charges CPU time
// spent outside ops. 0 if unknown.
ContextId ThreadNodeOf(ContextId context) {
  for (int depth = 0; context != 0 && depth < 100000; ++depth) {
    dlmonitor_context_t parent = 0;
    if (dlmonitor_context_frame(context, nullptr, &parent) != DLMONITOR_OK) return 0;
    if (parent == 1) return context;  // 1 is the root
    context = parent;
  }
  return 0;
}

// The innermost open op with a context, for the sampler.
DEEPCONTEXT_HOT
ContextId CurrentContext(const TimerStack& stack) {
  for (size_t i = stack.ops.size(); i > 0; --i) {
    if (stack.ops[i - 1].context != 0) return stack.ops[i - 1].context;
  }
  return 0;
}

}  // namespace

OpMetrics::OpMetrics(MetricStore& store, CpuSampler::TickHook also_on_tick)
    : generation_(g_next_generation.fetch_add(1)),
      wall_clock_(cpu::TscClock::Process()),
      store_(store),
      calls_(store.Register("calls", "count", "number of calls")),
      cpu_time_(store.Register("cpu_time", "ns",
                               "thread CPU time spent in the op itself")),
      wall_time_(store.Register("wall_time", "ns",
                                "wall time spent in the op itself")),
      also_on_tick_(also_on_tick),
      sampler_(store, cpu_time_, CpuSampler::TickHook{&OpMetrics::OnTick, this}) {}

void OpMetrics::StopSampling() {
  sampler_.Stop();
  // The threads' next ops make sure, out of line, that it runs again.
  sampling_epoch_.fetch_add(1, std::memory_order_release);
}

void OpMetrics::OnTick(void* self) {
  auto* metrics = static_cast<OpMetrics*>(self);
  metrics->Flush();
  if (metrics->also_on_tick_.run != nullptr) {
    metrics->also_on_tick_.run(metrics->also_on_tick_.arg);
  }
}

void OpMetrics::ResetAfterFork() {
  generation_.store(g_next_generation.fetch_add(1), std::memory_order_relaxed);
  log_.ResetAfterFork();
  sampler_.ResetAfterFork();
  sampling_epoch_.fetch_add(1, std::memory_order_release);
  ended_elsewhere_.ResetAfterFork();
}

void OpMetrics::Flush() {
  log_.DrainAll([this](const OpSample& sample) { Apply(sample); });
}

void OpMetrics::Apply(const OpSample& sample) {
  MetricStore::Sample samples[3];
  size_t count = 0;
  if (sample.call) samples[count++] = {calls_, 1};
  if (sample.cpu_ns != OpSample::kNoCpu) {
    samples[count++] = {cpu_time_, static_cast<double>(sample.cpu_ns)};
  }
  const int64_t wall = wall_clock_.TicksToNs(sample.wall_ticks);
  samples[count++] = {wall_time_, static_cast<double>(wall > 0 ? wall : 0)};
  store_.Add(sample.context, std::span<const MetricStore::Sample>(samples, count));
}

void OpMetrics::PushSlow(TimerStack& stack, const OpSample& sample) {
  if (stack.ring == nullptr) {
    stack.ring_owner = log_.Register();
    stack.ring = stack.ring_owner.get();
  } else {
    // Full: no sampling thread drains it (exact or no CPU time), or it
    // fell behind.
    stack.ring->Drain([this](const OpSample& queued) { Apply(queued); });
  }
  if (!stack.ring->TryPush(sample)) Apply(sample);
}

void OpMetrics::TakeEndedElsewhere(TimerStack& stack) {
  auto close = [this, &stack](const EndedElsewhere::End& end) {
    OpenOp op{};
    // Its time is not its parent's child time: the parent ran on here
    // while it was open.
    if (!EndedElsewhere::Remove(stack.ops, end, &op) || op.context == 0) return;
    const int64_t wall = end.at - op.wall_start - op.child_wall;
    // The thread CPU time of an op that spans threads is no thread's.
    const OpSample sample{op.context, wall > 0 ? wall : 0, OpSample::kNoCpu, /*call=*/true};
    if (stack.ring == nullptr || !stack.ring->TryPush(sample)) PushSlow(stack, sample);
  };
  ended_elsewhere_.Take(stack.framework_thread, &stack.ends_seen, close);
  if (stack.sampled != nullptr) {
    stack.sampled->current.store(CurrentContext(stack), std::memory_order_relaxed);
  }
}

void OpMetrics::SetCpuTimeMode(CpuTimeMode mode) {
  cpu_time_mode_.store(mode, std::memory_order_relaxed);
  // The sampling thread starts with the first op in sampled mode.
  if (mode != CpuTimeMode::kSampled) StopSampling();
}

// Enter and Exit are inlined into OnEvent, the callback each event calls.
[[gnu::always_inline]] inline void OpMetrics::Enter(const dlmonitor_event_t& event) {
  TimerStack* thread = Stack(generation_.load(std::memory_order_relaxed));
  if (thread == nullptr) return;
  TimerStack& stack = *thread;
  if (event.op->thread_id != 0) stack.framework_thread = event.op->thread_id;
  // Before the push: an op that ended elsewhere leaves before a new one
  // can take its id.
  if (ended_elsewhere_.posts() != stack.ends_seen) [[unlikely]] {
    TakeEndedElsewhere(stack);
  }
  const CpuTimeMode mode = cpu_time_mode_.load(std::memory_order_relaxed);
  // Filled in place: a copy of a local built field by field reads back
  // stores not yet done (a store-forwarding stall, most of Enter's time).
  stack.ops.MakeRoom();
  OpenOp& open = stack.ops.Push();
  open.op_id = event.op->op_id;
  open.cpu_start = kNoCpuTime;
  open.context = event.context;
  open.ends_seen = stack.ends_seen;
  if (mode == CpuTimeMode::kSampled) {
    if (stack.sampling_epoch != sampling_epoch_.load(std::memory_order_relaxed) ||
        stack.sampled == nullptr) [[unlikely]] {
      StartSampling(stack, event.context);
    }
    if (stack.sampled != nullptr && event.context != 0) {
      stack.sampled->current.store(event.context, std::memory_order_relaxed);
    }
  }
  // Read the clocks last so that our own bookkeeping is not charged to the op.
  open.wall_start = wall_clock_.NowTicks();
  if (mode == CpuTimeMode::kExact) open.cpu_start = cpu::ThreadCpuTimeNs();
}

void OpMetrics::StartSampling(TimerStack& stack, ContextId context) {
  // The epoch before the check: a stop that ends after it bumps the epoch
  // past the one kept, and the thread's next op checks again.
  stack.sampling_epoch = sampling_epoch_.load(std::memory_order_acquire);
  if (!sampler_.running()) sampler_.Start(SamplingIntervalNs());
  if (stack.sampled == nullptr && context != 0) {
    stack.sampled_owner = sampler_.RegisterCurrentThread(ThreadNodeOf(context));
    stack.sampled = stack.sampled_owner.get();
    if (stack.sampled != nullptr) stack.sampler = &sampler_;
  }
}

[[gnu::always_inline]] inline void OpMetrics::Exit(const dlmonitor_event_t& event) {
  // Clocks first, so that finding the op is not charged to it.
  int64_t cpu_end = cpu_time_mode_.load(std::memory_order_relaxed) == CpuTimeMode::kExact
                        ? cpu::ThreadCpuTimeNs()
                        : kNoCpuTime;
  const int64_t wall_end = wall_clock_.NowTicks();
  TimerStack* thread = Stack(generation_.load(std::memory_order_relaxed));
  if (thread == nullptr) return;
  TimerStack& stack = *thread;
  if (ended_elsewhere_.posts() != stack.ends_seen) [[unlikely]] {
    TakeEndedElsewhere(stack);
  }
  // Find the op; ops above it whose exit never came are dropped unrecorded.
  size_t i = stack.ops.size();
  while (i > 0 && stack.ops[i - 1].op_id != event.op->op_id) --i;
  if (i == 0) {
    // Not open here: started on another thread, or before profiling began.
    const uint64_t starting_thread = event.op->thread_id;
    if (starting_thread != 0 && starting_thread != stack.framework_thread) [[unlikely]] {
      ended_elsewhere_.Post(starting_thread, event.op->op_id, wall_end);
    }
    return;
  }
  // The fields it needs, not the entry copied whole: the exits of ops
  // nested in it have just stored its child times, and a copy's wider loads
  // straddling those stores wait for them to drain (as in
  // OpSampleRing::TryPush).
  const OpenOp& open = stack.ops[i - 1];
  const int64_t cpu_start = open.cpu_start;
  const int64_t wall_start = open.wall_start;
  const int64_t child_cpu = open.child_cpu;
  const int64_t child_wall = open.child_wall;
  stack.ops.resize(i - 1);
  if (stack.sampled != nullptr) {
    stack.sampled->current.store(CurrentContext(stack), std::memory_order_relaxed);
  }
  const bool with_cpu = cpu_start != kNoCpuTime;
  // The mode changed while the op ran: it was entered with exact CPU time.
  if (with_cpu && cpu_end == kNoCpuTime) cpu_end = cpu::ThreadCpuTimeNs();

  const int64_t cpu_total = with_cpu ? cpu_end - cpu_start : 0;
  const int64_t wall_total = wall_end - wall_start;
  const int64_t cpu_self = cpu_total - child_cpu;
  if (event.context != 0) {
    const int64_t wall_ticks = wall_total - child_wall;
    const int64_t cpu_ns = with_cpu ? (cpu_self > 0 ? cpu_self : 0) : OpSample::kNoCpu;
    // An engine wrapper is charged to its [backward] phase node; counting
    // it as a call there would read as a call of the phase.
    const bool call = event.op->kind != DLMONITOR_OP_BACKWARD_WRAPPER;
    // Field by field, not through an OpSample (OpSampleRing::TryPush).
    if (stack.ring == nullptr ||
        !stack.ring->TryPush(event.context, wall_ticks, cpu_ns, call)) [[unlikely]] {
      PushSlow(stack, OpSample{event.context, wall_ticks, cpu_ns, call});
    }
  }
  if (!stack.ops.empty()) {
    stack.ops.back().child_cpu += cpu_total;
    stack.ops.back().child_wall += wall_total;
  }
}

DEEPCONTEXT_HOT
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

}  // namespace deepcontext::profiler
