#include "runtime/dlmonitor/call_path_builder.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/common/thread_instance.h"

namespace deepcontext::dlmonitor {
namespace {

// Thread states are shared by all builders of the process (a thread_local
// cannot be per object); a generation unique across builders and forks
// tells a state that belongs to someone else.
std::atomic<uint64_t> g_next_generation{1};

struct OpEntry {
  uint64_t op_id = 0;
  ContextId context = kNoContext;
  // Where forward ops under this entry are anchored for backward grafting,
  // and how deep the Python stack was when the entry was pushed.
  ContextId anchor = kNoContext;
  int python_depth = 0;
  dlmonitor_op_kind_t kind = DLMONITOR_OP_OPERATOR;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    return std::hash<std::string_view>{}(s);
  }
};

}  // namespace

struct ThreadState {
  uint64_t generation = 0;
  ContextId root = kNoContext;
  std::vector<OpEntry> ops;
  int64_t last_remembered_sequence = -1;
  ContextId last_remembered_anchor = kNoContext;
  std::unordered_map<std::string, StringId, StringHash, std::equal_to<>>
      op_names;

  // The previous Python capture and what it resolved to, position by
  // position; ctx[i] == kNoContext means "not looked up yet".
  ContextId cached_base = kNoContext;
  int cached_start = -1;
  int cached_count = 0;
  python::RawFrame raw[CallPathBuilder::kMaxPythonDepth];
  ResolvedPythonFrame resolved[CallPathBuilder::kMaxPythonDepth];
  ContextId ctx[CallPathBuilder::kMaxPythonDepth];
};

CallPathBuilder::CallPathBuilder(ContextTree& tree, StringTable& strings,
                                 ForwardLinks& links,
                                 PythonFrameCache& python, bool python_enabled)
    : tree_(tree),
      strings_(strings),
      links_(links),
      python_(python),
      python_enabled_(python_enabled),
      forward_name_(strings.Intern("[forward]")),
      backward_name_(strings.Intern("[backward]")),
      generation_(g_next_generation.fetch_add(1)) {}

ThreadState* CallPathBuilder::State() {
  ThreadState* state = ThreadInstance<ThreadState>();
  if (state == nullptr) return nullptr;  // the thread is exiting
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  if (state->generation != generation) {
    *state = ThreadState{};
    state->generation = generation;
  }
  return state;
}

void CallPathBuilder::ResetAfterFork() {
  generation_.store(g_next_generation.fetch_add(1), std::memory_order_release);
  links_.Clear();
}

ContextId CallPathBuilder::ThreadRoot(ThreadState& state) {
  if (state.root != kNoContext) return state.root;
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

ContextId CallPathBuilder::PythonContext(ThreadState& state, ContextId base,
                                         int start, int* depth) {
  *depth = 0;
  if (!python_enabled_) return base;
  python::RawFrame frames[kMaxPythonDepth];
  const int count = python::CaptureCurrentThread(frames, kMaxPythonDepth);
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
    state.resolved[i] = python_.Lookup(frames[i]);
    state.ctx[i] = kNoContext;
  }
  state.cached_base = base;
  state.cached_start = start;
  state.cached_count = count;

  int kept = count;
  while (kept > start && state.resolved[kept - 1].hidden) --kept;
  *depth = kept;
  ContextId parent = base;
  for (int i = start; i < kept; ++i) {
    if (state.ctx[i] == kNoContext) {
      state.ctx[i] = tree_.Child(parent, state.resolved[i].key);
      if (state.ctx[i] == kNoContext) return parent;  // tree full
    }
    parent = state.ctx[i];
  }
  return parent;
}

StringId CallPathBuilder::InternOpName(ThreadState& state, const char* name) {
  std::string_view view(name == nullptr ? "" : name);
  auto it = state.op_names.find(view);
  if (it != state.op_names.end()) return it->second;
  const StringId id = strings_.Intern(view);
  // User-scope names can be unbounded (f-strings with step numbers): stop
  // caching rather than growing forever; the global table still dedupes.
  if (state.op_names.size() < 65536) state.op_names.emplace(view, id);
  return id;
}

ContextId CallPathBuilder::Phase(ContextId parent, StringId phase_name) {
  return tree_.Child(parent, FrameKey{DLMONITOR_FRAME_PHASE, phase_name, 0, 0});
}

ContextId CallPathBuilder::OnOpEnter(const dlmonitor_op_data_t& op) {
  ThreadState* thread = State();
  if (thread == nullptr) return kNoContext;
  ThreadState& state = *thread;
  OpEntry entry;
  entry.op_id = op.op_id;
  entry.kind = op.kind;

  // An engine wrapper gets its context from the backward function it runs
  // (see DLMONITOR_OP_BACKWARD_WRAPPER); until then it is pending.
  if (op.kind == DLMONITOR_OP_BACKWARD_WRAPPER) {
    state.ops.push_back(entry);
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

  auto python_base = [&](int* python_depth) {
    const ContextId base = top ? top->context : ThreadRoot(state);
    // Inside a scope, keep from the frame that opened the scope: it shows
    // the line within the scope that is running now.
    const int start = top ? std::max(top->python_depth - 1, 0) : 0;
    return PythonContext(state, base, start, python_depth);
  };

  if (wrapper != nullptr) {
    // Resolve the wrapper to the [backward] node of the path this op takes.
    ContextId anchor = kNoContext;
    if (!from_python) {
      anchor = top->context;
    } else {
      if (op.kind == DLMONITOR_OP_BACKWARD_FUNCTION) {
        anchor = links_.Find(op.forward_thread_id, op.sequence_number);
      }
      if (anchor == kNoContext) anchor = python_base(&wrapper->python_depth);
    }
    wrapper->anchor = anchor;
    wrapper->context = Phase(anchor, backward_name_);
    entry.anchor = anchor;
    entry.python_depth = wrapper->python_depth;
    entry.context = tree_.Child(wrapper->context, op_key);
    state.ops.push_back(entry);
    return entry.context;
  }

  switch (op.kind) {
    case DLMONITOR_OP_BACKWARD_FUNCTION: {
      if (!from_python) {
        entry.anchor = top->anchor;
        entry.context = tree_.Child(top->context, op_key);
        break;
      }
      ContextId anchor =
          links_.Find(op.forward_thread_id, op.sequence_number);
      if (anchor == kNoContext) anchor = python_base(&entry.python_depth);
      entry.anchor = anchor;
      entry.context = tree_.Child(Phase(anchor, backward_name_), op_key);
      break;
    }
    case DLMONITOR_OP_USER_SCOPE: {
      const ContextId base = python_base(&entry.python_depth);
      entry.context =
          tree_.Child(base, FrameKey{DLMONITOR_FRAME_USER_SCOPE, name, 0, 0});
      entry.anchor = entry.context;
      break;
    }
    case DLMONITOR_OP_OPERATOR:
    default: {
      if (from_python) {
        entry.anchor = python_base(&entry.python_depth);
        const ContextId parent = op.sequence_number >= 0
                                     ? Phase(entry.anchor, forward_name_)
                                     : entry.anchor;
        entry.context = tree_.Child(parent, op_key);
      } else {
        entry.anchor = top->anchor;
        entry.python_depth = top->python_depth;
        entry.context = tree_.Child(top->context, op_key);
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
  state.ops.push_back(entry);
  return entry.context;
}

ContextId CallPathBuilder::OnOpExit(const dlmonitor_op_data_t& op) {
  ThreadState* thread = State();
  if (thread == nullptr) return kNoContext;
  ThreadState& state = *thread;
  for (size_t i = state.ops.size(); i > 0; --i) {
    if (state.ops[i - 1].op_id == op.op_id) {
      const ContextId context = state.ops[i - 1].context;
      state.ops.resize(i - 1);
      return context;
    }
  }
  return kNoContext;
}

ContextId CallPathBuilder::Current() {
  ThreadState* thread = State();
  if (thread == nullptr) return kNoContext;
  ThreadState& state = *thread;
  size_t depth = state.ops.size();
  while (depth > 0 && state.ops[depth - 1].context == kNoContext) --depth;
  const OpEntry* top = depth == 0 ? nullptr : &state.ops[depth - 1];
  if (top != nullptr && top->kind != DLMONITOR_OP_USER_SCOPE) {
    return top->context;
  }
  const ContextId base = top ? top->context : ThreadRoot(state);
  const int start = top ? std::max(top->python_depth - 1, 0) : 0;
  int python_depth = 0;
  return PythonContext(state, base, start, &python_depth);
}

}  // namespace deepcontext::dlmonitor
