// PyTorch adapter for DLMonitor.
//
// Compiled on the user's machine against the headers of the torch that is
// actually imported (RecordFunction's accessors are inline and read member
// offsets, so the adapter must match that torch's layout and C++ ABI), then
// loaded into the process after `import torch`. It registers ONE global
// RecordFunction callback for operators, backward functions and user scopes
// and forwards every start/end to DLMonitor through the emit function it is
// handed, so it does not link against the runtime library.
//
// Callbacks run without the GIL, possibly on autograd threads; nothing here
// touches Python.
//
// With DEEPCONTEXT_TORCH_CUDA (torch >= 2.1 built with CUDA) it also
// reports the CUDA caching allocator's allocations and frees as DLMonitor
// memory events, so device memory is attributed to the calling context.
#include <ATen/record_function.h>
#ifdef DEEPCONTEXT_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include "deepcontext/dlmonitor.h"

namespace {

dlmonitor_emit_fn g_emit = nullptr;
at::CallbackHandle g_handle = 0;
bool g_installed = false;

constexpr char kEngineWrapperPrefix[] = "autograd::engine::evaluate_function: ";

// `name` is fn.name(), read once per event: it is an out-of-line call.
dlmonitor_op_kind_t KindOf(const at::RecordFunction& fn, const char* name) {
  switch (fn.scope()) {
    case at::RecordScope::BACKWARD_FUNCTION:
      return DLMONITOR_OP_BACKWARD_FUNCTION;
    case at::RecordScope::USER_SCOPE:
      return DLMONITOR_OP_USER_SCOPE;
    default: {
      // Asked at every op's entry and exit: almost every name ("aten::...")
      // differs at its second character, so look there before comparing.
      return name != nullptr && name[0] == 'a' && name[1] == 'u' &&
                     std::strncmp(name, kEngineWrapperPrefix,
                                  sizeof(kEngineWrapperPrefix) - 1) == 0
                 ? DLMONITOR_OP_BACKWARD_WRAPPER
                 : DLMONITOR_OP_OPERATOR;
    }
  }
}

// The logical id of the thread that started `fn` (RecordFunction::
// currentThreadId() there): torch stores it in the callbacks it hands the
// RecordFunction, so reading it is a load, where currentThreadId() is an
// out-of-line call and a lookup of its thread-local through the loader.
uint64_t StartingThreadId(const at::RecordFunction& fn) {
  const uint64_t id = fn.threadId();
  return id != 0 ? id : at::RecordFunction::currentThreadId();
}

// Pairs an op's start with its end without RecordFunction's own handle,
// which needsIds(true) draws from one process-wide atomic counter at every
// op: a locked add on a cache line that every thread running ops writes.
// The RecordFunction's address is unique among live ops and stays put until
// its end. An async op can end on another thread, after its address was
// reused: the starting thread's id in the top bits keeps such an end from
// matching a different op left open on the ending thread. User-space
// addresses leave those bits zero (47 bits on x86-64, at most 52 on
// aarch64).
uint64_t OpIdOf(const at::RecordFunction& fn, uint64_t starting_thread) {
  return reinterpret_cast<uintptr_t>(&fn) ^ (starting_thread << 52);
}

void Emit(const at::RecordFunction& fn, dlmonitor_phase_t phase) {
  dlmonitor_op_data_t op{};
  op.struct_size = sizeof(op);
  op.framework = DLMONITOR_FRAMEWORK_PYTORCH;
  op.name = fn.name();
  op.kind = KindOf(fn, op.name);
  const uint64_t starting_thread = StartingThreadId(fn);
  op.op_id = OpIdOf(fn, starting_thread);
  // An exit on another thread is handed to the starting one by this id.
  op.thread_id = starting_thread;
  // Read at entry only (include/deepcontext/dlmonitor.h): an exit needs
  // neither.
  if (phase == DLMONITOR_PHASE_ENTER) {
    op.sequence_number = fn.seqNr();
    op.forward_thread_id = fn.forwardThreadId();
  } else {
    op.sequence_number = -1;
  }
  dlmonitor_event_t event{};
  event.struct_size = sizeof(event);
  event.domain = DLMONITOR_DOMAIN_FRAMEWORK_OP;
  event.phase = phase;
  event.op = &op;
  g_emit(&event);
}

// OpIdOf pairs start with end, so no per-op ObserverContext has to be
// allocated (end callbacks run with a null context all the same).
std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  Emit(fn, DLMONITOR_PHASE_ENTER);
  return nullptr;
}

void OnEnd(const at::RecordFunction& fn, at::ObserverContext*) {
  Emit(fn, DLMONITOR_PHASE_EXIT);
}

// Two switches decide what is reported: profiling on or off
// (deepcontext_torch_enable) and the trace window open or closed
// (deepcontext_torch_window). Written under g_switch_mutex; the allocator
// hook reads them without it.
std::mutex g_switch_mutex;
std::atomic<bool> g_profiling{true};  // addGlobalCallback starts enabled
std::atomic<bool> g_window_open{true};
bool g_callback_enabled = true;  // guarded by g_switch_mutex

#ifdef DEEPCONTEXT_TORCH_CUDA

// Runs with the device's allocator lock held (and maybe the GIL): it must
// not call back into torch or Python. FREE_REQUESTED is when the tensor
// lets go of the block, which is what the program's memory use follows;
// FREE_COMPLETED only adds the wait for other streams.
//
// Segments (cudaMalloc'd or mapped memory the allocator caches) are reported
// as reserved memory, inside and between trace windows alike: they are few,
// and the reserved total must stay right for the whole run.
void OnAllocatorTrace(
    const c10::cuda::CUDACachingAllocator::TraceEntry& entry) {
  using Action = c10::cuda::CUDACachingAllocator::TraceEntry::Action;
  if (!g_profiling.load(std::memory_order_relaxed)) return;
  int64_t bytes = 0;
  uint32_t flags = 0;
  if (entry.action_ == Action::SEGMENT_ALLOC ||
      entry.action_ == Action::SEGMENT_MAP) {
    bytes = static_cast<int64_t>(entry.size_);
    flags = DLMONITOR_MEMORY_RESERVED;
  } else if (entry.action_ == Action::SEGMENT_FREE ||
             entry.action_ == Action::SEGMENT_UNMAP) {
    bytes = -static_cast<int64_t>(entry.size_);
    flags = DLMONITOR_MEMORY_RESERVED;
  } else if (entry.action_ == Action::ALLOC) {
    // Between trace windows allocations are not attributed (their context
    // would cost a call-path walk each); frees still are, so that blocks
    // allocated inside a window leave the live bytes when freed.
    if (!g_window_open.load(std::memory_order_relaxed)) return;
    bytes = static_cast<int64_t>(entry.size_);
  } else if (entry.action_ == Action::FREE_REQUESTED) {
    bytes = -static_cast<int64_t>(entry.size_);
  } else {
    return;
  }
  dlmonitor_memory_data_t memory{};
  memory.struct_size = sizeof(memory);
  memory.device = entry.device_;
  memory.address = reinterpret_cast<const void*>(entry.addr_);
  memory.bytes = bytes;
  memory.flags = flags;
  dlmonitor_event_t event{};
  event.struct_size = sizeof(event);
  event.domain = DLMONITOR_DOMAIN_MEMORY;
  event.phase = DLMONITOR_PHASE_INSTANT;
  event.memory = &memory;
  g_emit(&event);
}
#endif

// Sets one switch; the op callback runs while both are on.
int SetSwitch(std::atomic<bool>& which, int on) {
  if (!g_installed) return -1;
  std::lock_guard<std::mutex> guard(g_switch_mutex);
  which.store(on != 0, std::memory_order_relaxed);
  const bool want = g_profiling.load(std::memory_order_relaxed) &&
                    g_window_open.load(std::memory_order_relaxed);
  if (want == g_callback_enabled) return 0;
  try {
    if (want) {
      at::reenableCallback(g_handle);
    } else {
      at::disableCallback(g_handle);
    }
    g_callback_enabled = want;
    return 0;
  } catch (...) {
    return -1;
  }
}

void SetError(char* error, size_t size, const char* text) {
  if (error != nullptr && size > 0) std::snprintf(error, size, "%s", text);
}

}  // namespace

extern "C" {

// Registers the callback (once per process). Returns 0, or -1 with a
// message in `error`.
__attribute__((visibility("default"))) int deepcontext_torch_install(
    dlmonitor_emit_fn emit, char* error, size_t error_size) {
  if (emit == nullptr) {
    SetError(error, error_size, "no DLMonitor emit function given");
    return -1;
  }
  if (g_installed) return 0;
  try {
    g_emit = emit;
    g_handle = at::addGlobalCallback(
        at::RecordFunctionCallback(&OnStart, &OnEnd)
            .needsInputs(false)
            .needsIds(false)
            .scopes({at::RecordScope::FUNCTION,
                     at::RecordScope::BACKWARD_FUNCTION,
                     at::RecordScope::USER_SCOPE}));
    g_installed = true;
    return 0;
  } catch (const std::exception& e) {
    SetError(error, error_size, e.what());
    return -1;
  }
}

// Starts reporting CUDA caching-allocator events. Call it after CUDA is
// initialized: the allocator only passes trackers to the per-device
// allocators that exist at this point. Returns 0, or -1 with a message.
__attribute__((visibility("default"))) int deepcontext_torch_track_cuda_memory(
    char* error, size_t error_size) {
#ifdef DEEPCONTEXT_TORCH_CUDA
  static std::atomic<bool> attached{false};
  if (g_emit == nullptr) {
    SetError(error, error_size, "the adapter is not installed");
    return -1;
  }
  if (attached.exchange(true)) return 0;
  try {
    c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker(
        &OnAllocatorTrace);
    return 0;
  } catch (const std::exception& e) {
    attached.store(false);
    SetError(error, error_size, e.what());
    return -1;
  }
#else
  SetError(error, error_size,
           "the adapter was built without CUDA allocator support "
           "(torch without CUDA, or older than 2.1)");
  return -1;
#endif
}

// Pauses or resumes the callback without removing it (removal requires
// that no op runs anywhere, which a library cannot guarantee).
__attribute__((visibility("default"))) int deepcontext_torch_enable(int on) {
  return SetSwitch(g_profiling, on);
}

// The trace windows' switch (deepcontext_set_op_switch): ops are
// intercepted while profiling is on AND a window is open; allocations are
// reported inside windows only, frees always.
__attribute__((visibility("default"))) int deepcontext_torch_window(int open) {
  return SetSwitch(g_window_open, open);
}

}  // extern "C"
