#include "runtime/dlmonitor/call_path_builder.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/common/thread_instance.h"

namespace deepcontext::dlmonitor {

// One entry of a thread's op shadow stack.
struct OpEntry {
  uint64_t op_id = 0;
  ContextId context = kNoContext;
  // Where forward ops under this entry are anchored for backward grafting,
  // and how deep the Python stack was when the entry was pushed.
  ContextId anchor = kNoContext;
  int python_depth = 0;
  dlmonitor_op_kind_t kind = DLMONITOR_OP_OPERATOR;
  // Native stack at the entry of the op (or of the outermost op it is
  // nested in) when native frames are on; the frames a GPU API call adds
  // beyond it are the op's own (see InsideOpContext).
  native::StackId entry_stack = native::kNoStack;
};

namespace {

// Thread states are shared by all builders of the process (a thread_local
// cannot be per object); a generation unique across builders and forks
// tells a state that belongs to someone else.
std::atomic<uint64_t> g_next_generation{1};


// A GPU API call's native stack inside one op.
struct InsidePathKey {
  ContextId op = kNoContext;
  native::StackId stack = native::kNoStack;
  bool operator==(const InsidePathKey&) const = default;
};

struct InsidePathKeyHash {
  size_t operator()(const InsidePathKey& key) const {
    uint64_t h = key.op * 0x9E3779B97F4A7C15ULL ^ key.stack;
    h *= 0xBF58476D1CE4E5B9ULL;
    return static_cast<size_t>(h ^ (h >> 31));
  }
};

// Modules whose frames end a GPU API call's path: the driver and the tracing
// library (and everything they call, our callbacks included).
// By module path (FrameResolver's, not dladdr's: dladdr scans every symbol
// of a library per call, a millisecond in libtorch).
bool IsGpuDriverModule(std::string_view file) {
  return file.find("libcuda.so") != std::string_view::npos ||
         file.find("libcupti.so") != std::string_view::npos;
}

// A native stack under one base, Python frames kept from `start` on.
struct NativePathKey {
  ContextId base = kNoContext;
  int start = 0;
  native::StackId stack = native::kNoStack;
  bool operator==(const NativePathKey&) const = default;
};

struct NativePathKeyHash {
  size_t operator()(const NativePathKey& key) const {
    uint64_t h = key.base * 0x9E3779B97F4A7C15ULL;
    h ^= (static_cast<uint64_t>(key.stack) << 20) ^
         static_cast<uint64_t>(key.start);
    h *= 0xBF58476D1CE4E5B9ULL;
    return static_cast<size_t>(h ^ (h >> 31));
  }
};

// One Python stack seen with a native path key, and where it led.
struct NativePathVariant {
  std::vector<python::RawFrame> python;  // frames [start, count)
  ContextId context = kNoContext;
  int depth = 0;
};

// Per-thread bound on cached native paths; past it the cache starts over.
constexpr size_t kMaxNativeVariants = 1 << 16;

// Return addresses scanned, from the innermost, for the reporting caller.
constexpr int kCallerScan = 16;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    return std::hash<std::string_view>{}(s);
  }
};

}  // namespace

// An op name seen before at the same address: its id without hashing the
// text. `text` is the interned copy the name is checked against, so a
// transient name (a user scope's f-string) whose memory is reused for
// another name is never mistaken for it.
struct OpNameCacheEntry {
  const char* pointer = nullptr;
  const char* text = nullptr;
  size_t length = 0;
  StringId id = 0;
};
constexpr size_t kOpNameCacheSize = 256;  // direct-mapped by address

// One remembered ContextTree::Child answer for a key without file or line.
struct ChildCacheEntry {
  ContextId parent = kNoContext;
  uint32_t kind = 0;
  StringId name = 0;
  ContextId child = kNoContext;
};
constexpr size_t kChildCacheSize = 512;

struct ThreadState {
  uint64_t generation = 0;
  ContextId root = kNoContext;
  std::vector<OpEntry> ops;
  int64_t last_remembered_sequence = -1;
  ContextId last_remembered_anchor = kNoContext;
  std::unordered_map<std::string, StringId, StringHash, std::equal_to<>>
      op_names;
  OpNameCacheEntry op_name_cache[kOpNameCacheSize];

  // The previous Python capture and what it resolved to, position by
  // position; ctx[i] == kNoContext means "not looked up yet".
  ContextId cached_base = kNoContext;
  int cached_start = -1;
  int cached_count = 0;
  python::RawFrame raw[CallPathBuilder::kMaxPythonDepth];
  ResolvedPythonFrame resolved[CallPathBuilder::kMaxPythonDepth];
  ContextId ctx[CallPathBuilder::kMaxPythonDepth];
  // Call sites this thread resolved last (see PythonFrameCache).
  PythonFrameCache::ThreadCache frame_cache;

  // Native call-path cache (see NativeContext).
  std::unordered_map<NativePathKey, std::vector<NativePathVariant>,
                     NativePathKeyHash>
      native_paths;
  size_t native_variants = 0;
  // Stack id of the latest NativeContext capture.
  native::StackId last_native_stack = native::kNoStack;
  // GPU API call paths inside ops (see InsideOpContext).
  std::unordered_map<InsidePathKey, ContextId, InsidePathKeyHash> inside_paths;
  // Recent (parent, operator or phase) -> child answers of the tree (see
  // CachedChild).
  ChildCacheEntry children[kChildCacheSize];
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
      allocated_before_name_(strings.Intern("[allocated before profiling]")),
      truncated_name_(strings.Intern(kTruncatedPythonName)),
      generation_(g_next_generation.fetch_add(1)) {}

CallPathBuilder::~CallPathBuilder() = default;

const char* CallPathBuilder::EnableNative(bool on) {
  if (on) {
    std::call_once(native_once_, [this] {
      unwinder_ = native::Unwinder::Default().kind();
      interpreter_.Detect();
      resolver_ = std::make_unique<native::FrameResolver>();
    });
  }
  native_enabled_.store(on, std::memory_order_release);
  return native::Unwinder::Default().Name();
}

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

int CallPathBuilder::CapturePython(python::RawFrame* frames, bool* truncated) {
  // One frame more than is kept tells a stack of exactly kMaxPythonDepth
  // frames from a deeper one, whose outermost frames are then cut.
  const int count = python::CaptureCurrentThread(frames, kMaxPythonDepth + 1);
  *truncated = count > kMaxPythonDepth;
  return *truncated ? kMaxPythonDepth : count;
}

ContextId CallPathBuilder::TruncationMarker(ContextId base) {
  const ContextId marker = tree_.Child(
      base, FrameKey{DLMONITOR_FRAME_PYTHON, truncated_name_, 0, 0});
  return marker != kNoContext ? marker : base;
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
  python::RawFrame captured[kMaxPythonDepth + 1];
  bool truncated = false;
  const int count = CapturePython(captured, &truncated);
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

ContextId CallPathBuilder::NativeContext(ThreadState& state, ContextId base,
                                         int start, uintptr_t caller_pc,
                                         bool drop_caller_module,
                                         int* depth) {
  uintptr_t pcs[native::kMaxNativeDepth];
  const int captured = native::Unwinder(unwinder_).Capture(
      pcs, native::kMaxNativeDepth, 0);
  // Frames inner of the reporting caller are this monitor's own.
  int native_count = captured;
  for (int i = captured - 1; i >= 0 && i >= captured - kCallerScan; --i) {
    if (pcs[i] == caller_pc) {
      native_count = i + 1;
      break;
    }
  }
  const native::StackId stack = stacks_.Intern(pcs, native_count);
  state.last_native_stack = stack;
  if (stack == native::kNoStack) {
    return PythonContext(state, base, start, depth);
  }
  python::RawFrame python_frames[kMaxPythonDepth + 1];
  bool truncated = false;
  const int count =
      python_enabled_ ? CapturePython(python_frames, &truncated) : 0;
  const python::RawFrame* frames = python_frames + (truncated ? 1 : 0);
  if (truncated && start == 0) base = TruncationMarker(base);
  const int first_python = std::min(start, count);

  const NativePathKey key{base, start, stack};
  std::vector<NativePathVariant>& variants = state.native_paths[key];
  for (const NativePathVariant& variant : variants) {
    if (variant.python.size() == static_cast<size_t>(count - first_python) &&
        std::equal(variant.python.begin(), variant.python.end(),
                   frames + first_python)) {
      *depth = variant.depth;
      return variant.context;
    }
  }

  // First sight: resolve, splice, build the path.
  ResolvedPythonFrame resolved[kMaxPythonDepth];
  bool entry[kMaxPythonDepth];
  for (int i = 0; i < count; ++i) {
    resolved[i] = python_.Lookup(frames[i], state.frame_cache);
    entry[i] = frames[i].entry;
  }
  int kept = count;
  while (kept > first_python && resolved[kept - 1].hidden) --kept;
  // The reporting adapter's own frames (its module) are not part of the
  // program's path either. Looked up here, once per new path (and per pc
  // inside FrameResolver).
  int used = native_count;
  if (drop_caller_module) {
    const std::string caller_module = resolver_->Resolve(caller_pc).module;
    while (!caller_module.empty() && used > 0 &&
           resolver_->Resolve(pcs[used - 1]).module == caller_module) {
      --used;
    }
  }
  native::NativeFrameClass classes[native::kMaxNativeDepth];
  interpreter_.ClassifyAll(pcs, used, classes);
  constexpr int kCapacity = native::kMaxNativeDepth + kMaxPythonDepth;
  native::SplicedFrame spliced[kCapacity];
  // Hidden frames are spliced too, so that activations still pair up, and
  // dropped from the result.
  const int total = native::SplicePythonFrames(
      classes, used, entry, count, native::SpliceOptions{}, spliced,
      kCapacity);
  // Start at the first Python frame kept (native frames outer of it are
  // process start-up, or already in `base`); with no such frame, after the
  // last Python frame.
  int first = 0;
  for (int j = 0; j < total; ++j) {
    if (spliced[j].source != native::SplicedFrame::Source::kPython) continue;
    first = j + 1;
    if (spliced[j].index >= first_python) {
      first = j;
      break;
    }
  }
  ContextId parent = base;
  for (int j = first; j < total; ++j) {
    const native::SplicedFrame& frame = spliced[j];
    ContextId child = kNoContext;
    if (frame.source == native::SplicedFrame::Source::kPython) {
      if (frame.index >= kept) continue;
      child = tree_.Child(parent, resolved[frame.index].key);
    } else {
      child = NativeChild(parent, pcs[frame.index]);
    }
    if (child == kNoContext) break;  // tree full
    parent = child;
  }
  *depth = kept;
  if (state.native_variants >= kMaxNativeVariants) {
    state.native_paths.clear();
    state.native_variants = 0;
  }
  NativePathVariant variant;
  variant.python.assign(frames + first_python, frames + count);
  variant.context = parent;
  variant.depth = kept;
  state.native_paths[key].push_back(std::move(variant));
  ++state.native_variants;
  return parent;
}

ContextId CallPathBuilder::NativeChild(ContextId parent, uintptr_t pc) {
  FrameKey key;
  bool found = false;
  {
    std::lock_guard<std::mutex> guard(native_keys_mutex_);
    auto it = native_keys_.find(pc);
    if (it != native_keys_.end()) {
      key = it->second;
      found = true;
    }
  }
  if (!found) {
    // Named by function and source line where debug info has them, else by
    // function (or module+offset) and module path: call sites of one
    // function without line information share a node.
    const native::SymbolizedFrame symbol = resolver_->Resolve(pc);
    key.kind = DLMONITOR_FRAME_NATIVE;
    key.name = strings_.Intern(symbol.DisplayName());
    key.file = strings_.Intern(symbol.file.empty() ? symbol.module
                                                   : symbol.file);
    key.line = symbol.file.empty() || symbol.line <= 0
                   ? 0
                   : static_cast<uint32_t>(symbol.line);
    std::lock_guard<std::mutex> guard(native_keys_mutex_);
    native_keys_.emplace(pc, key);
  }
  return tree_.Child(parent, key);
}

StringId CallPathBuilder::InternOpName(ThreadState& state, const char* name) {
  if (name == nullptr) name = "";
  // Framework op names are mostly static strings: their address finds them.
  OpNameCacheEntry& cached =
      state.op_name_cache[(reinterpret_cast<uintptr_t>(name) >> 3) %
                          kOpNameCacheSize];
  if (cached.pointer == name &&
      std::strncmp(name, cached.text, cached.length + 1) == 0) {
    return cached.id;
  }
  const std::string_view view(name);
  StringId id = 0;
  if (auto it = state.op_names.find(view); it != state.op_names.end()) {
    id = it->second;
  } else {
    id = strings_.Intern(view);
    // User-scope names can be unbounded (f-strings with step numbers): stop
    // caching rather than growing forever; the global table still dedupes.
    if (state.op_names.size() < 65536) state.op_names.emplace(view, id);
  }
  cached = OpNameCacheEntry{name, strings_.Get(id), view.size(), id};
  return id;
}

ContextId CallPathBuilder::CachedChild(ThreadState& state, ContextId parent,
                                       const FrameKey& key) {
  // Every op looks up its node under its parent; a node, once made, is never
  // removed or moved, and a full tree folds a key the same way each time, so
  // the answer can be kept per thread and the tree's lock skipped.
  ChildCacheEntry& entry =
      state.children[(parent * 0x9E3779B97F4A7C15ULL ^ key.name * 0x85EBCA6BULL ^
                      key.kind) %
                     kChildCacheSize];
  if (entry.parent == parent && entry.name == key.name &&
      entry.kind == key.kind && entry.child != kNoContext) {
    return entry.child;
  }
  const ContextId child = tree_.Child(parent, key);
  if (child != kNoContext && key.file == 0 && key.line == 0) {
    entry = ChildCacheEntry{parent, key.kind, key.name, child};
  }
  return child;
}

ContextId CallPathBuilder::Phase(ContextId parent, StringId phase_name) {
  return tree_.Child(parent, FrameKey{DLMONITOR_FRAME_PHASE, phase_name, 0, 0});
}

ContextId CallPathBuilder::AllocatedBefore(uintptr_t caller_pc) {
  if (caller_pc == 0) {
    caller_pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  }
  const ContextId current = Current(caller_pc);
  if (current == kNoContext) return kNoContext;
  return Phase(current, allocated_before_name_);
}

ContextId CallPathBuilder::OnOpEnter(const dlmonitor_op_data_t& op,
                                     uintptr_t caller_pc) {
  const bool reported_by_adapter = caller_pc != 0;
  if (caller_pc == 0) {
    caller_pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  }
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

  auto python_base = [&](int* python_depth, bool with_native = false) {
    const ContextId base = top ? top->context : ThreadRoot(state);
    // Inside a scope, keep from the frame that opened the scope: it shows
    // the line within the scope that is running now.
    const int start = top ? std::max(top->python_depth - 1, 0) : 0;
    if (with_native && native_enabled_.load(std::memory_order_acquire)) {
      return NativeContext(state, base, start, caller_pc, reported_by_adapter,
                           python_depth);
    }
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
    entry.context = CachedChild(state, wrapper->context, op_key);
    state.ops.push_back(entry);
    return entry.context;
  }

  switch (op.kind) {
    case DLMONITOR_OP_BACKWARD_FUNCTION: {
      if (!from_python) {
        entry.anchor = top->anchor;
        entry.context = CachedChild(state, top->context, op_key);
        break;
      }
      ContextId anchor =
          links_.Find(op.forward_thread_id, op.sequence_number);
      if (anchor == kNoContext) anchor = python_base(&entry.python_depth);
      entry.anchor = anchor;
      entry.context = CachedChild(
          state,
          CachedChild(state, anchor,
                      FrameKey{DLMONITOR_FRAME_PHASE, backward_name_, 0, 0}),
          op_key);
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
        state.last_native_stack = native::kNoStack;
        entry.anchor = python_base(&entry.python_depth, /*with_native=*/true);
        entry.entry_stack = state.last_native_stack;
        const ContextId parent =
            op.sequence_number >= 0
                ? CachedChild(state, entry.anchor,
                              FrameKey{DLMONITOR_FRAME_PHASE, forward_name_, 0, 0})
                : entry.anchor;
        entry.context = CachedChild(state, parent, op_key);
      } else {
        entry.anchor = top->anchor;
        entry.python_depth = top->python_depth;
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

ContextId CallPathBuilder::Current(uintptr_t caller_pc) {
  if (caller_pc == 0) {
    caller_pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  }
  ThreadState* thread = State();
  if (thread == nullptr) return kNoContext;
  ThreadState& state = *thread;
  size_t depth = state.ops.size();
  while (depth > 0 && state.ops[depth - 1].context == kNoContext) --depth;
  const OpEntry* top = depth == 0 ? nullptr : &state.ops[depth - 1];
  if (top != nullptr && top->kind != DLMONITOR_OP_USER_SCOPE) {
    if (top->entry_stack != native::kNoStack &&
        native_enabled_.load(std::memory_order_acquire)) {
      return InsideOpContext(state, *top, caller_pc);
    }
    return top->context;
  }
  const ContextId base = top ? top->context : ThreadRoot(state);
  const int start = top ? std::max(top->python_depth - 1, 0) : 0;
  int python_depth = 0;
  return PythonContext(state, base, start, &python_depth);
}

ContextId CallPathBuilder::InsideOpContext(ThreadState& state,
                                           const OpEntry& op,
                                           uintptr_t caller_pc) {
  uintptr_t pcs[native::kMaxNativeDepth];
  const int captured = native::Unwinder(unwinder_).Capture(
      pcs, native::kMaxNativeDepth, 0);
  int count = captured;  // frames inner of the caller are the monitor's
  for (int i = captured - 1; i >= 0 && i >= captured - kCallerScan; --i) {
    if (pcs[i] == caller_pc) {
      count = i + 1;
      break;
    }
  }
  const native::StackId stack = stacks_.Intern(pcs, count);
  if (stack == native::kNoStack) return op.context;
  const InsidePathKey key{op.context, stack};
  if (auto it = state.inside_paths.find(key); it != state.inside_paths.end()) {
    return it->second;
  }
  // First sight: the frames this call adds beyond the op's entry stack
  // (they diverge inside the op's dispatch), up to the first frame of the
  // GPU driver or tracing library.
  const std::span<const uintptr_t> entry = stacks_.Get(op.entry_stack);
  int first = 0;
  while (first < count && static_cast<size_t>(first) < entry.size() &&
         pcs[first] == entry[first]) {
    ++first;
  }
  int end = first;
  while (end < count && !IsGpuDriverModule(resolver_->Resolve(pcs[end]).module)) {
    ++end;
  }
  ContextId parent = op.context;
  for (int i = first; i < end; ++i) {
    const ContextId child = NativeChild(parent, pcs[i]);
    if (child == kNoContext) break;  // tree full
    parent = child;
  }
  if (state.inside_paths.size() >= kMaxNativeVariants) {
    state.inside_paths.clear();
  }
  state.inside_paths.emplace(key, parent);
  return parent;
}

}  // namespace deepcontext::dlmonitor
