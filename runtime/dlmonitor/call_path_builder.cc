#include "runtime/dlmonitor/call_path_builder.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/common/hot_path.h"
#include "runtime/common/thread_instance.h"
#include "runtime/dlmonitor/call_path_thread_state.h"
#include "runtime/native/capture_stats.h"

namespace deepcontext::dlmonitor {

namespace {

// Thread states are shared by all builders of the process (a thread_local
// cannot be per object); a generation unique across builders and forks
// tells a state that belongs to someone else.
std::atomic<uint64_t> g_next_generation{1};

}  // namespace

CallPathBuilder::CallPathBuilder(ContextTree& tree, StringTable& strings,
                                 ForwardLinks& links,
                                 PythonFrameCache& python, bool python_enabled)
    : generation_(g_next_generation.fetch_add(1)),
      python_enabled_(python_enabled),
      forward_name_(strings.Intern("[forward]")),
      backward_name_(strings.Intern("[backward]")),
      allocated_before_name_(strings.Intern("[allocated before profiling]")),
      truncated_name_(strings.Intern(kTruncatedPythonName)),
      compile_name_(strings.Intern("[compile]")),
      tree_(tree),
      links_(links),
      python_(python),
      strings_(strings) {}

CallPathBuilder::~CallPathBuilder() = default;

const char* CallPathBuilder::EnableNative(bool on) {
  if (on) {
    std::call_once(native_once_, [this] {
      unwinder_ = &native::Unwinder::Default();
      interpreter_.Detect();
      resolver_ = std::make_unique<native::FrameResolver>();
    });
    // DEEPCONTEXT_INSIDE_TRAILS=0 unwinds every call inside an op, to time
    // or check the trails against it; read at each start.
    // DEEPCONTEXT_ENTRY_TRAILS=0 does so for op entries.
    auto on_unless_zero = [this](const char* variable) {
      const char* value = std::getenv(variable);
      return unwinder_->kind() == native::UnwinderKind::kCfiCache &&
             !(value != nullptr && std::string_view(value) == "0");
    };
    trails_usable_.store(on_unless_zero("DEEPCONTEXT_INSIDE_TRAILS"), std::memory_order_relaxed);
    entry_trails_usable_.store(on_unless_zero("DEEPCONTEXT_ENTRY_TRAILS"),
                               std::memory_order_relaxed);
  }
  native_enabled_.store(on, std::memory_order_release);
  return native::Unwinder::Default().Name();
}

namespace {

// Rebuilt in place: ThreadState is tens of KB, and `state = ThreadState{}`
// builds a temporary that large on the stack. Where the compiler probes big
// frames page by page (-fstack-clash-protection, the default of Ubuntu's and
// Fedora's GCC), State(), called several times per op, paid for that frame
// on every call.
[[gnu::noinline, gnu::cold]] void ResetThreadState(ThreadState& state,
                                                   uint64_t generation) {
  state.~ThreadState();
  new (&state) ThreadState();
  state.generation = generation;
}

}  // namespace

DEEPCONTEXT_HOT
ThreadState* CallPathBuilder::State() {
  ThreadState* state = ThreadInstance<ThreadState>();
  if (state == nullptr) return nullptr;  // the thread is exiting
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  if (state->generation != generation) [[unlikely]] {
    ResetThreadState(*state, generation);
  }
  return state;
}

void CallPathBuilder::ResetAfterFork() {
  generation_.store(g_next_generation.fetch_add(1), std::memory_order_release);
  links_.Clear();
  ended_elsewhere_.ResetAfterFork();
}

DEEPCONTEXT_HOT
bool CallPathBuilder::EndsPosted(const ThreadState& state) const {
  return ended_elsewhere_.posts() != state.ends_seen;
}

void CallPathBuilder::TakeEndedElsewhere(ThreadState& state) {
  ended_elsewhere_.Take(state.framework_thread, &state.ends_seen,
                        [&state](const EndedElsewhere::End& end) {
                          EndedElsewhere::Remove(state.ops, end);
                        });
}

DEEPCONTEXT_HOT
int CallPathBuilder::CapturePython(python::RawFrame* frames, bool* truncated,
                                   PythonMark* mark) {
  // One frame more than is kept tells a stack of exactly kMaxPythonDepth
  // frames from a deeper one, whose outermost frames are then cut.
  const void* thread = nullptr;
  int count = python::CaptureCurrentThread(frames, kMaxPythonDepth + 1, &thread);
  *truncated = count > kMaxPythonDepth;
  if (*truncated) count = kMaxPythonDepth;
  *mark = count > 0 ? PythonMark{frames[(*truncated ? 1 : 0) + count - 1], count, thread,
                                  python::InnermostFrame(thread)}
                    : PythonMark{};
  return count;
}

ContextId CallPathBuilder::TruncationMarker(ContextId base) {
  const ContextId marker = tree_.Child(
      base, FrameKey{DLMONITOR_FRAME_PYTHON, truncated_name_, 0, 0});
  return marker != kNoContext ? marker : base;
}

ContextId CallPathBuilder::ThreadRoot(ThreadState& state) {
  return state.root != kNoContext ? state.root : MakeThreadRoot(state);
}

ContextId CallPathBuilder::MakeThreadRoot(ThreadState& state) {
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  std::string name;
  if (tid == getpid()) {
    name = "main thread";
  } else {
    char thread_name[32] = {0};
    pthread_getname_np(pthread_self(), thread_name, sizeof(thread_name));
    name = "thread " + std::to_string(tid);
    if (thread_name[0] != '\0') name += std::string(" (") + thread_name + ")";
  }
  FrameKey key{DLMONITOR_FRAME_THREAD, strings_.Intern(name), 0, 0};
  state.root = tree_.Child(kRootContext, key);
  return state.root;
}

DEEPCONTEXT_HOT
ContextId CallPathBuilder::PythonContext(ThreadState& state, ContextId base,
                                         int start, int* depth,
                                         bool base_in_compile) {
  *depth = 0;
  state.last_python = PythonMark{};
  state.last_in_compile = base_in_compile;
  if (!python_enabled_) return base;
  const call_path::BorrowedScratch<call_path::PythonCaptureBuffer> buffer(
      state.python_capture);
  python::RawFrame* captured = buffer->frames();
  bool truncated = false;
  const int count = CapturePython(captured, &truncated, &state.last_python);
  const python::RawFrame* frames = captured + (truncated ? 1 : 0);
  if (truncated && start == 0) base = TruncationMarker(base);
  if (count <= start) {
    *depth = count;
    return base;
  }
  int same = start;
  if (state.cached_base == base && state.cached_start == start) {
    const int limit = std::min(count, state.cached_count);
    while (same < limit && frames[same] == state.raw[same]) ++same;
  }
  for (int i = same; i < count; ++i) {
    state.raw[i] = frames[i];
    state.resolved[i] = python_.Lookup(frames[i], state.frame_cache);
    state.ctx[i] = kNoContext;
  }
  // Frames [start, same) are those of the previous capture: what was found
  // about them holds, and only the frames past them are looked at.
  if (same == start || state.first_compile >= same) {
    state.first_compile = count;
    for (int i = same; i < count; ++i) {
      if (state.resolved[i].compile) {
        state.first_compile = i;
        break;
      }
    }
  }
  state.ctx_known = std::min(state.ctx_known, same);
  state.cached_base = base;
  state.cached_start = start;
  state.cached_count = count;

  int kept = count;
  while (kept > start && state.resolved[kept - 1].hidden) --kept;
  *depth = kept;
  // The [compile] phase goes before the first compilation frame, or after
  // the last kept frame when that one is hidden (an autotuner's launcher).
  // It depends on frames [start, i] only, so cached ctx[i] stay right.
  int compile_at = -1;
  if (!base_in_compile && state.first_compile < count) {
    compile_at = std::min(state.first_compile, kept);
  }
  const int resume = std::max(start, std::min(state.ctx_known, kept));
  ContextId parent = resume > start ? state.ctx[resume - 1] : base;
  for (int i = resume; i < kept; ++i) {
    if (state.ctx[i] == kNoContext) {
      const ContextId from = i == compile_at ? Phase(parent, compile_name_) : parent;
      if (from == kNoContext) return parent;  // tree full
      state.ctx[i] = CachedChild(state, from, state.resolved[i].key);
      if (state.ctx[i] == kNoContext) return parent;  // tree full
    }
    parent = state.ctx[i];
    state.ctx_known = i + 1;
  }
  if (compile_at == kept) {
    const ContextId phase = Phase(parent, compile_name_);
    if (phase != kNoContext) parent = phase;
  }
  state.last_in_compile = base_in_compile || compile_at >= 0;
  return parent;
}

DEEPCONTEXT_HOT
void CallPathBuilder::MarkPython(ThreadState& state, OpEntry& entry) const {
  entry.python = PythonMark{};
  if (!python_enabled_) return;
  const call_path::BorrowedScratch<call_path::PythonCaptureBuffer> buffer(
      state.python_capture);
  python::RawFrame* captured = buffer->frames();
  bool truncated = false;
  CapturePython(captured, &truncated, &entry.python);
}

DEEPCONTEXT_HOT
bool CallPathBuilder::PythonInside(const OpEntry& top) const {
  if (!python_enabled_) return false;
  // Asked by every nested op and every GPU call inside an op: most find the
  // record the entry found, two loads where reading the frame is several
  // more, into the frame and its code object.
  if (top.python.record != nullptr &&
      python::InnermostFrame(top.python.thread) == top.python.record) {
    return false;
  }
  python::RawFrame innermost;
  // Every op nested in one entered from Python asks this: the entry's
  // thread state saves looking it up each time.
  const int count = top.python.thread != nullptr
                        ? python::CaptureThread(top.python.thread, &innermost, 1)
                        : python::CaptureCurrentThread(&innermost, 1);
  if (count == 0) return false;
  return top.python.count == 0 || !(innermost == top.python.top);
}

DEEPCONTEXT_HOT
ContextId CallPathBuilder::CachedChild(ThreadState& state, ContextId parent,
                                       const FrameKey& key) {
  ChildCache::Entry& slot = state.children.SlotOf(parent, key);
  const ContextId child = ChildCache::Answer(slot, parent, key);
  if (child != kNoContext) [[likely]] return child;
  return UncachedChild(slot, parent, key);
}

ContextId CallPathBuilder::UncachedChild(ChildCache::Entry& slot, ContextId parent,
                                         const FrameKey& key) {
  const ContextId child = tree_.Child(parent, key);
  ChildCache::Remember(slot, parent, key, child);
  return child;
}

ContextId CallPathBuilder::Phase(ContextId parent, StringId phase_name) {
  return tree_.Child(parent, FrameKey{DLMONITOR_FRAME_PHASE, phase_name, 0, 0});
}

ContextId CallPathBuilder::AllocatedBefore(const native::CallerFrame& caller) {
  const ContextId current =
      Current(caller.pc != 0 ? caller : DEEPCONTEXT_RETURN_ADDRESS_FRAME());
  if (current == kNoContext) return kNoContext;
  return Phase(current, allocated_before_name_);
}

DEEPCONTEXT_HOT
ContextId CallPathBuilder::EntryPythonContext(
    ThreadState& state, const OpEntry* top, OpEntry& into,
    const NativeCaller* native) {
  const ContextId base = top ? top->context : ThreadRoot(state);
  // Inside a scope, keep from the frame that opened the scope: it shows
  // the line within the scope that is running now.
  const int start = top ? std::max(top->python_depth - 1, 0) : 0;
  const bool base_in_compile = top != nullptr && top->in_compile;
  ContextId context;
  if (native != nullptr && native_enabled_.load(std::memory_order_acquire)) {
    context = NativeContext(state, base, start, native->frame,
                            native->drop_caller_module, &into.python_depth);
    state.last_in_compile = base_in_compile;
  } else {
    context = PythonContext(state, base, start, &into.python_depth,
                            base_in_compile);
  }
  into.python = state.last_python;
  into.in_compile = state.last_in_compile;
  return context;
}

DEEPCONTEXT_HOT
ContextId CallPathBuilder::OnOpEnter(const dlmonitor_op_data_t& op,
                                     const native::CallerFrame& caller) {
  const native::PathCallTimer timer(native::PathCall::kOpEnter);
  const bool reported_by_adapter = caller.pc != 0;
  ThreadState* thread = State();
  if (thread == nullptr) return kNoContext;
  ThreadState& state = *thread;
  if (op.thread_id != 0) state.framework_thread = op.thread_id;
  // Before the entry is pushed: an op that ended elsewhere is gone before
  // a new one can take its address, and with it its id.
  if (EndsPosted(state)) [[unlikely]] TakeEndedElsewhere(state);
  // The entry is filled in place on the stack: pushing a copy of a local
  // one, built field by field, stalled on reading back its fresh stores
  // with wider loads. Room is made first, so that pointers to the entries
  // below it stay valid.
  state.ops.MakeRoom();

  // An engine wrapper gets its context from the backward function it runs
  // (see DLMONITOR_OP_BACKWARD_WRAPPER); until then it is pending.
  if (op.kind == DLMONITOR_OP_BACKWARD_WRAPPER) {
    OpEntry& entry = state.ops.Push();
    entry.op_id = op.op_id;
    entry.kind = op.kind;
    entry.ends_seen = state.ends_seen;
    return kNoContext;
  }
  OpEntry* wrapper = nullptr;
  if (!state.ops.empty() &&
      state.ops.back().kind == DLMONITOR_OP_BACKWARD_WRAPPER &&
      state.ops.back().context == kNoContext) {
    wrapper = &state.ops.back();
  }
  // The entry the new op hangs from, looking through a pending wrapper.
  const size_t depth = state.ops.size() - (wrapper ? 1 : 0);
  const OpEntry* top = depth == 0 ? nullptr : &state.ops[depth - 1];
  const bool from_python =
      top == nullptr || top->kind == DLMONITOR_OP_USER_SCOPE;
  const StringId name = InternOpName(state, op.name);
  const FrameKey op_key{DLMONITOR_FRAME_OPERATOR, name, 0, 0};
  OpEntry& entry = state.ops.Push();
  entry.op_id = op.op_id;
  entry.kind = op.kind;
  entry.ends_seen = state.ends_seen;
  // Taken off the stack again if finding its context throws (out of
  // memory: the event is dropped).
  struct PopUnlessKept {
    OpStack* ops;
    ~PopUnlessKept() {
      if (ops != nullptr) ops->pop_back();
    }
  } pop_unless_kept{&state.ops};


  if (wrapper != nullptr) {
    // Resolve the wrapper to the [backward] node of the path this op takes.
    ContextId anchor = kNoContext;
    if (!from_python) {
      anchor = top->context;
      wrapper->python = top->python;
      wrapper->in_compile = top->in_compile;
    } else {
      if (op.kind == DLMONITOR_OP_BACKWARD_FUNCTION) {
        anchor = links_.Find(op.forward_thread_id, op.sequence_number);
      }
      if (anchor == kNoContext) {
        anchor = EntryPythonContext(state, top, *wrapper, nullptr);
      } else {
        MarkPython(state, *wrapper);
      }
    }
    wrapper->anchor = anchor;
    // Through the thread's cache: every backward node's wrapper asks this.
    wrapper->context = CachedChild(
        state, anchor, FrameKey{DLMONITOR_FRAME_PHASE, backward_name_, 0, 0});
    entry.anchor = anchor;
    entry.python_depth = wrapper->python_depth;
    entry.python = wrapper->python;
    entry.in_compile = wrapper->in_compile;
    entry.context = CachedChild(state, wrapper->context, op_key);
    pop_unless_kept.ops = nullptr;
    return entry.context;
  }

  switch (op.kind) {
    case DLMONITOR_OP_BACKWARD_FUNCTION: {
      if (!from_python) {
        entry.anchor = top->anchor;
        entry.python_depth = top->python_depth;
        entry.python = top->python;
        entry.in_compile = top->in_compile;
        entry.context = CachedChild(state, top->context, op_key);
        break;
      }
      ContextId anchor =
          links_.Find(op.forward_thread_id, op.sequence_number);
      if (anchor == kNoContext) {
        anchor = EntryPythonContext(state, top, entry, nullptr);
      } else {
        MarkPython(state, entry);
      }
      entry.anchor = anchor;
      entry.context = CachedChild(
          state,
          CachedChild(state, anchor,
                      FrameKey{DLMONITOR_FRAME_PHASE, backward_name_, 0, 0}),
          op_key);
      break;
    }
    case DLMONITOR_OP_USER_SCOPE: {
      const ContextId base = EntryPythonContext(state, top, entry, nullptr);
      entry.context =
          tree_.Child(base, FrameKey{DLMONITOR_FRAME_USER_SCOPE, name, 0, 0});
      entry.anchor = entry.context;
      break;
    }
    case DLMONITOR_OP_OPERATOR:
    default: {
      if (from_python) {
        state.last_native_stack = native::kNoStack;
        // Without a caller frame, the frames are kept from OnOpEnter's
        // caller on (its return address; no walk start).
        const NativeCaller native_caller{
            reported_by_adapter ? caller : DEEPCONTEXT_RETURN_ADDRESS_FRAME(),
            reported_by_adapter};
        entry.anchor = EntryPythonContext(state, top, entry, &native_caller);
        entry.entry_stack = state.last_native_stack;
        const ContextId parent =
            op.sequence_number >= 0
                ? CachedChild(state, entry.anchor,
                              FrameKey{DLMONITOR_FRAME_PHASE, forward_name_, 0, 0})
                : entry.anchor;
        entry.context = CachedChild(state, parent, op_key);
      } else if (PythonInside(*top)) {
        // Called from Python code that runs inside the parent op: below
        // the lines past the parent's. Backward still grafts at the
        // parent's anchor (the line that called into the framework).
        entry.anchor = top->anchor;
        ContextId base = PythonContext(state, top->context, top->python.count,
                                       &entry.python_depth, top->in_compile);
        entry.python = state.last_python;
        entry.in_compile = state.last_in_compile;
        if (op.sequence_number >= 0) {
          base = CachedChild(state, base,
                             FrameKey{DLMONITOR_FRAME_PHASE, forward_name_, 0, 0});
        }
        entry.context = CachedChild(state, base, op_key);
      } else {
        entry.anchor = top->anchor;
        entry.python_depth = top->python_depth;
        entry.python = top->python;
        entry.in_compile = top->in_compile;
        entry.entry_stack = top->entry_stack;
        entry.context = CachedChild(state, top->context, op_key);
      }
      // Sequence numbers only grow on a thread and nested ops share their
      // parent's anchor, so most ops can skip the shared map.
      if (op.sequence_number >= 0 &&
          (op.sequence_number != state.last_remembered_sequence ||
           entry.anchor != state.last_remembered_anchor)) {
        links_.Remember(op.thread_id, op.sequence_number, entry.anchor);
        state.last_remembered_sequence = op.sequence_number;
        state.last_remembered_anchor = entry.anchor;
      }
      break;
    }
  }
  pop_unless_kept.ops = nullptr;
  return entry.context;
}

DEEPCONTEXT_HOT
ContextId CallPathBuilder::OnOpExit(const dlmonitor_op_data_t& op) {
  ThreadState* thread = State();
  if (thread == nullptr) return kNoContext;
  ThreadState& state = *thread;
  // Ops ended elsewhere are taken at the next entry or context query, the
  // events that read the stack's top; an exit here cannot be theirs.
  for (size_t i = state.ops.size(); i > 0; --i) {
    if (state.ops[i - 1].op_id == op.op_id) {
      const ContextId context = state.ops[i - 1].context;
      state.ops.resize(i - 1);
      return context;
    }
  }
  // Not open here: started on another thread, or before profiling began.
  if (op.thread_id != 0 && op.thread_id != state.framework_thread) {
    ended_elsewhere_.Post(op.thread_id, op.op_id, 0);
  }
  return kNoContext;
}

DEEPCONTEXT_HOT
ContextId CallPathBuilder::Current(const native::CallerFrame& caller) {
  const native::PathCallTimer timer(native::PathCall::kContextQuery);
  ThreadState* thread = State();
  if (thread == nullptr) return kNoContext;
  ThreadState& state = *thread;
  if (EndsPosted(state)) [[unlikely]] TakeEndedElsewhere(state);
  size_t depth = state.ops.size();
  while (depth > 0 && state.ops[depth - 1].context == kNoContext) --depth;
  const OpEntry* top = depth == 0 ? nullptr : &state.ops[depth - 1];
  if (top != nullptr && top->kind != DLMONITOR_OP_USER_SCOPE) {
    if (PythonInside(*top)) {
      int python_depth = 0;
      return PythonContext(state, top->context, top->python.count,
                           &python_depth, top->in_compile);
    }
    if (top->entry_stack != native::kNoStack &&
        native_enabled_.load(std::memory_order_acquire)) {
      // Without a caller frame, from Current's caller on.
      return InsideOpContext(state, *top,
                             caller.pc != 0 ? caller : DEEPCONTEXT_RETURN_ADDRESS_FRAME());
    }
    return top->context;
  }
  const ContextId base = top ? top->context : ThreadRoot(state);
  const int start = top ? std::max(top->python_depth - 1, 0) : 0;
  int python_depth = 0;
  return PythonContext(state, base, start, &python_depth,
                       top != nullptr && top->in_compile);
}

}  // namespace deepcontext::dlmonitor
