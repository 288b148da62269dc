#include "runtime/xla/xla_ranges.h"

#include <array>
#include <cstdio>
#include <ctime>

namespace deepcontext::xla {
namespace {

constexpr std::string_view kTslDomain = "TSL";
constexpr std::string_view kCompilePhase = "[compile]";
constexpr std::string_view kCompileWallTime = "compile_wall_time";
// Stack entries kept per thread: deeper pushes are counted, not stored.
constexpr size_t kMaxDepth = 256;

std::atomic<uint64_t> g_instances{0};

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

std::unique_ptr<InternedAnnotation> InternAnnotation(std::string_view message,
                                                     AnnotationKind* kind) {
  // Only the strings attribution uses are kept: compiler passes (thousands
  // per module) are classified and dropped.
  const size_t colon = message.find(":#");
  const std::string_view type = message.substr(0, colon);
  const bool kept = type == "Thunk" || type == "XlaModule" || type == "XlaCompile";
  if (!kept) {
    *kind = type.substr(0, 3) == "Xla" ? AnnotationKind::kCompile : AnnotationKind::kOther;
    return nullptr;
  }
  auto value = std::make_unique<InternedAnnotation>();
  value->annotation = ParseAnnotation(message);
  const Annotation& a = value->annotation;
  if (a.kind == AnnotationKind::kThunk) {
    value->path = OpPath(a.op_name, a.hlo_op);
  } else if (a.kind == AnnotationKind::kCompile) {
    value->path.push_back({gpu::GpuNodeKind::kPhase, std::string(kCompilePhase)});
    value->opens_compile = type == "XlaCompile";
    if (!a.module.empty() && value->opens_compile) {
      value->path.push_back({gpu::GpuNodeKind::kUserScope, a.module});
    }
  }
  *kind = a.kind;
  return value;
}

RegisteredString::RegisteredString(std::string_view text) {
  interned_ = InternAnnotation(text, &kind_);
}

struct XlaRanges::ThreadState {
  uint64_t instance = 0;
  std::vector<Entry> stack;
  size_t overflow = 0;  // pushes beyond kMaxDepth not yet popped
  // Direct-mapped cache: (base context, annotation) -> refined context.
  struct Slot {
    gpu::ContextId base = 0;
    const void* what = nullptr;
    const void* module = nullptr;
    uint64_t sources_version = 0;  // HloSourceRegistry::version() then
    gpu::ContextId result = 0;
  };
  // Large enough for the distinct (line, instruction) pairs of a training
  // step (hundreds): a miss walks the context tree.
  std::array<Slot, 2048> cache{};
  // Registered string handles seen by this thread.
  struct HandleSlot {
    uint64_t handle = 0;
    Entry entry;
  };
  std::array<HandleSlot, 64> handles{};
  // The command buffer recording this thread appends to, until the stack
  // drops below recording_depth (its instruction's range ends).
  Recording* recording = nullptr;
  size_t recording_depth = 0;
};

namespace {
// Which position counter a captured or replayed piece of work uses.
size_t WorkKind(std::string_view name) {
  if (name == "<memset>") return 1;
  if (name == "<memcpy>") return 2;
  return 0;
}
bool SameWork(std::string_view recorded, std::string_view name) {
  if (recorded.empty()) return WorkKind(name) == 0;  // a kernel of unknown name
  return recorded == name;
}

// The thread's state and the tracker it belongs to (a state is freed with
// its tracker, so the pointer is only read when the ids match).
thread_local void* t_state = nullptr;
thread_local uint64_t t_state_instance = 0;
}  // namespace

XlaRanges::XlaRanges(gpu::ContextSink& sink, IsThreadRoot is_thread_root,
                     const HloSourceRegistry& sources)
    : sink_(sink), is_thread_root_(is_thread_root), sources_(sources),
      instance_(++g_instances), replays_(sink, is_thread_root) {}

XlaRanges::~XlaRanges() {
  for (ThreadState* state : threads_) delete state;
}

XlaRanges::ThreadState* XlaRanges::State(bool create) {
  if (t_state_instance == instance_) return static_cast<ThreadState*>(t_state);
  if (!create) return nullptr;
  // A state of an earlier tracker belongs to (and is freed by) that one.
  auto* state = new ThreadState;
  state->instance = instance_;
  state->stack.reserve(16);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    threads_.push_back(state);
  }
  t_state = state;
  t_state_instance = instance_;
  return state;
}

void XlaRanges::OnDomainCreated(uint64_t domain, std::string_view name) {
  if (name == kTslDomain) tsl_domain_.store(domain, std::memory_order_relaxed);
}

bool XlaRanges::Tracked(uint64_t domain) const {
  const uint64_t tsl = tsl_domain_.load(std::memory_order_relaxed);
  return tsl == 0 || tsl == domain;
}

XlaRanges::Entry XlaRanges::Intern(std::string_view message) {
  const size_t colon = message.find(":#");
  const std::string_view type = message.substr(0, colon);
  if (type != "Thunk" && type != "XlaModule" && type != "XlaCompile") {
    if (type.substr(0, 3) == "Xla") return {AnnotationKind::kCompile, nullptr};
    return {};
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = interned_.find(message);
  if (it == interned_.end()) {
    AnnotationKind kind = AnnotationKind::kOther;
    it = interned_.emplace(std::string(message), InternAnnotation(message, &kind)).first;
  }
  return {it->second->annotation.kind, it->second.get()};
}

void XlaRanges::OnStringRegistered(uint64_t handle, std::string_view text) {
  const Entry entry = Intern(text);
  std::lock_guard<std::mutex> lock(mutex_);
  registered_[handle] = entry;
}

bool XlaRanges::Push(uint64_t domain, std::string_view message) {
  if (!Tracked(domain)) return false;
  return PushEntry(domain, Intern(message));
}

bool XlaRanges::PushRegistered(uint64_t domain, uint64_t string_handle) {
  if (!Tracked(domain)) return false;
  ThreadState* state = State(true);
  auto& slot = state->handles[(string_handle >> 4) % state->handles.size()];
  Entry entry;
  if (slot.handle == string_handle && string_handle != 0) {
    entry = slot.entry;
  } else {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = registered_.find(string_handle);
      if (it != registered_.end()) entry = it->second;
    }
    // Unknown handles (registered before tracing began) push a neutral
    // entry so that pops stay balanced.
    slot.handle = string_handle;
    slot.entry = entry;
  }
  return PushEntry(domain, entry);
}

bool XlaRanges::PushString(const RegisteredString& string) {
  return PushEntry(0, {string.kind(), string.interned()});
}

bool XlaRanges::PushAscii(std::string_view message) { return PushEntry(0, Intern(message)); }


void XlaRanges::EnableStats(bool timed) {
  stats_ = true;
  stats_timed_ = timed;
}

std::string XlaRanges::StatsLine() const {
  if (!stats_) return {};
  char line[256];
  std::snprintf(line, sizeof line,
                "pushes=%llu refines=%llu refine_misses=%llu nvtx_ms=%.3f refine_ms=%.3f",
                static_cast<unsigned long long>(pushes_.load()),
                static_cast<unsigned long long>(refines_.load()),
                static_cast<unsigned long long>(refine_misses_.load()),
                static_cast<double>(nvtx_ns_.load()) / 1e6,
                static_cast<double>(refine_ns_.load()) / 1e6);
  return line;
}

bool XlaRanges::PushEntry(uint64_t, Entry entry) {
  ThreadState* state = State(true);
  if (stats_) pushes_.fetch_add(1, std::memory_order_relaxed);
  seen_.store(true, std::memory_order_relaxed);
  if (state->stack.size() >= kMaxDepth) {
    ++state->overflow;
    return false;
  }
  if (entry.kind == AnnotationKind::kThunk) op_ranges_.fetch_add(1, std::memory_order_relaxed);
  bool opened_compile = false;
  if (entry.what != nullptr && entry.what->opens_compile) {
    opened_compile = true;
    for (const Entry& e : state->stack) {
      if (e.kind == AnnotationKind::kCompile) opened_compile = false;
    }
  }
  state->stack.push_back(entry);
  return opened_compile;
}

void XlaRanges::Pop(uint64_t domain) {
  if (Tracked(domain)) PopRange();
}

void XlaRanges::PopRange() {
  ThreadState* state = State(false);
  if (state == nullptr) return;
  if (state->overflow > 0) {
    --state->overflow;
    return;
  }
  if (state->stack.empty()) return;  // pushed before tracing began
  const Entry top = state->stack.back();
  state->stack.pop_back();
  if (state->recording != nullptr && state->stack.size() < state->recording_depth) {
    std::lock_guard<std::mutex> lock(graph_mutex_);
    state->recording->closed = true;
    state->recording = nullptr;
  }
  if (top.kind == AnnotationKind::kCompile && top.what != nullptr &&
      compiling_.load(std::memory_order_relaxed)) {
    CompileOrigin done;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (compile_.module == top.what && compile_.thread == std::this_thread::get_id()) {
        done = compile_;
        compile_ = CompileOrigin{};
        compiling_.store(false, std::memory_order_relaxed);
      }
    }
    if (done.context != 0) RecordCompileTime(done, NowNs());
  }
}

void XlaRanges::RecordCompileTime(const CompileOrigin& done, uint64_t end_ns) {
  ThreadState* state = State(true);
  if (state == nullptr || done.module == nullptr || end_ns < done.start_ns) return;
  const gpu::ContextId module = Descend(done.context, done.module, nullptr, state);
  if (module == done.context) return;  // no node for it: keep the line's own metrics clean
  // Once per compilation, which takes milliseconds at least: registering
  // (idempotent, under the sink's lock) costs nothing next to it.
  const int metric = sink_.RegisterNamedMetric(
      kCompileWallTime, "ns",
      "wall time of a compilation (XLA: a module's XlaCompile range) on the thread that "
      "triggered it");
  sink_.AddNamed(module, metric, static_cast<double>(end_ns - done.start_ns));
}

void XlaRanges::BeginCompile(gpu::ContextId origin) {
  ThreadState* state = State(false);
  if (state == nullptr || state->stack.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  compile_.context = origin;
  compile_.module = state->stack.back().what;
  compile_.thread = std::this_thread::get_id();
  compile_.start_ns = NowNs();
  compiling_.store(origin != 0, std::memory_order_relaxed);
}

const InternedAnnotation* XlaRanges::WithSources(const InternedAnnotation* thunk,
                                                 const InternedAnnotation* module) {
  if (module == nullptr || module->annotation.module.empty()) return thunk;
  const std::string key = module->annotation.module + '\n' + thunk->annotation.hlo_op + '\n' +
                          thunk->annotation.op_name;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = with_sources_.find(key);
    if (it != with_sources_.end()) return it->second.get();
  }
  const std::vector<SourceFrame> frames =
      sources_.Frames(module->annotation.module, thunk->annotation.hlo_op);
  // Not known (yet): asked again on the next cache miss.
  if (frames.empty()) return thunk;
  auto value = std::make_unique<InternedAnnotation>(*thunk);
  // Python line -> [phase] -> source lines -> scopes -> primitive -> op.
  const size_t at =
      !value->path.empty() && value->path[0].kind == gpu::GpuNodeKind::kPhase ? 1 : 0;
  std::vector<PathNode> lines;
  for (const SourceFrame& f : frames) {
    lines.push_back({gpu::GpuNodeKind::kPython, f.function, f.file, f.line});
  }
  value->path.insert(value->path.begin() + static_cast<std::ptrdiff_t>(at), lines.begin(),
                     lines.end());
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = with_sources_[key];
  if (!slot) slot = std::move(value);
  return slot.get();
}

gpu::ContextId XlaRanges::Descend(gpu::ContextId base, const InternedAnnotation* what,
                                  const InternedAnnotation* module, ThreadState* state) {
  if (base == 0 || what == nullptr) return base;
  auto& slot = state->cache[((base * 0x9E3779B97F4A7C15ull) ^
                             reinterpret_cast<uintptr_t>(what) >> 4 ^
                             reinterpret_cast<uintptr_t>(module) >> 6) %
                            state->cache.size()];
  const uint64_t version = sources_.version();
  if (slot.base == base && slot.what == what && slot.module == module &&
      slot.sources_version == version) {
    return slot.result;
  }
  if (stats_) refine_misses_.fetch_add(1, std::memory_order_relaxed);
  const InternedAnnotation* path = what;
  if (what->annotation.kind == AnnotationKind::kThunk) path = WithSources(what, module);
  const gpu::ContextId context = WalkPath(sink_, base, path->path);
  if (context == 0) return base;
  // An instruction's context can be moved to another call that launches
  // its command buffer (replay_contexts.h); compilations stay.
  if (what->annotation.kind == AnnotationKind::kThunk) replays_.Remember(context, base, &path->path);
  // A module registered later (a new version) makes the slot stale.
  slot = {base, what, module, version, context};
  return context;
}

gpu::ContextId XlaRanges::CompileContext(gpu::ContextId base, const Entry& own,
                                         ThreadState* state) {
  // A compiler or autotuning thread has no Python line of its own: its work
  // goes to the line whose call is being compiled.
  const InternedAnnotation* module = own.kind == AnnotationKind::kCompile ? own.what : nullptr;
  if (is_thread_root_ == nullptr || is_thread_root_(base)) {
    if (!compiling_.load(std::memory_order_relaxed)) return base;
    std::lock_guard<std::mutex> lock(mutex_);
    if (compile_.context == 0) return base;
    base = compile_.context;
    module = compile_.module;
  }
  if (module == nullptr) {
    static const InternedAnnotation* const kPhaseOnly = [] {
      auto* value = new InternedAnnotation;
      value->path.push_back({gpu::GpuNodeKind::kPhase, std::string(kCompilePhase)});
      return value;
    }();
    module = kPhaseOnly;
  }
  return Descend(base, module, nullptr, state);
}

gpu::ContextId XlaRanges::Refine(gpu::ContextId base) {
  if (!seen_.load(std::memory_order_relaxed)) return base;
  if (stats_) {
    refines_.fetch_add(1, std::memory_order_relaxed);
    if (stats_timed_) {
      const uint64_t start = NowNs();
      const gpu::ContextId context = RefineNow(base);
      refine_ns_.fetch_add(NowNs() - start, std::memory_order_relaxed);
      return context;
    }
  }
  return RefineNow(base);
}

gpu::ContextId XlaRanges::RefineNow(gpu::ContextId base) {
  ThreadState* state = State(false);
  if (state == nullptr || state->stack.empty()) {
    if (!compiling_.load(std::memory_order_relaxed)) return base;
    return CompileContext(base, Entry{}, State(true));
  }
  // The outermost compile entry names the module; the innermost thunk is
  // the instruction (a command buffer's thunk encloses those it records).
  const Entry* thunk = nullptr;
  const Entry* module = nullptr;
  const Entry* compile = nullptr;
  for (auto it = state->stack.rbegin(); it != state->stack.rend(); ++it) {
    if (it->kind == AnnotationKind::kThunk && thunk == nullptr) thunk = &*it;
    if (it->kind == AnnotationKind::kModule && module == nullptr) module = &*it;
    if (it->kind == AnnotationKind::kCompile) {
      if (it->what != nullptr || compile == nullptr) compile = &*it;
    }
  }
  if (compile != nullptr) return CompileContext(base, *compile, state);
  if (thunk != nullptr) {
    return Descend(base, thunk->what, module != nullptr ? module->what : nullptr, state);
  }
  return base;
}

void XlaRanges::OnCapturedKernel(std::string_view kernel_name) {
  ThreadState* state = State(false);
  if (state == nullptr) return;
  // The innermost instruction and the command buffer instruction around it.
  const Entry* module = nullptr;
  const Entry* instruction = nullptr;
  const Entry* command_buffer = nullptr;
  size_t depth = 0;
  for (size_t i = state->stack.size(); i > 0; --i) {
    const Entry& e = state->stack[i - 1];
    if (e.kind == AnnotationKind::kModule && module == nullptr) module = &e;
    if (e.kind != AnnotationKind::kThunk || e.what == nullptr) continue;
    if (instruction == nullptr) {
      instruction = &e;
    } else if (command_buffer == nullptr) {
      command_buffer = &e;
      depth = i;
    }
  }
  if (command_buffer == nullptr || module == nullptr) return;
  std::lock_guard<std::mutex> lock(graph_mutex_);
  auto& recording = recordings_[{module->what, command_buffer->what}];
  if (!recording) recording = std::make_unique<Recording>();
  if (recording->closed) return;  // a later retrace: same commands
  recording->kernels.emplace_back(std::string(kernel_name), instruction->what);
  recording->end[WorkKind(kernel_name)] = recording->kernels.size();
  captured_kernels_.fetch_add(1, std::memory_order_relaxed);
  state->recording = recording.get();
  state->recording_depth = depth;
}

void XlaRanges::OnGraphLaunch(uint64_t correlation_id, gpu::ContextId base) {
  ThreadState* state = State(false);
  if (state == nullptr || base == 0) return;
  const Entry* module = nullptr;
  const Entry* command_buffer = nullptr;
  for (auto it = state->stack.rbegin(); it != state->stack.rend(); ++it) {
    if (it->kind == AnnotationKind::kModule && module == nullptr) module = &*it;
    if (it->kind == AnnotationKind::kThunk && command_buffer == nullptr) command_buffer = &*it;
  }
  if (command_buffer == nullptr || module == nullptr) return;
  std::lock_guard<std::mutex> lock(graph_mutex_);
  auto it = recordings_.find({module->what, command_buffer->what});
  if (it == recordings_.end() || it->second->kernels.empty()) return;
  // Launches whose kernels never all arrived are not kept forever.
  if (graph_launches_.size() >= 4096) graph_launches_.clear();
  GraphLaunch launch;
  launch.recording = it->second.get();
  launch.base = base;
  launch.module = module->what;
  graph_launches_[correlation_id] = launch;
}

gpu::ContextId XlaRanges::ResolveGraphKernel(uint64_t correlation_id, uint64_t node_id,
                                             std::string_view kernel_name) {
  // How far a launch's kernel may be ahead of the recording: kernels
  // recorded but not run (or whose records were lost) are skipped.
  constexpr size_t kLookahead = 8;
  constexpr size_t kNone = static_cast<size_t>(-1);
  const InternedAnnotation* instruction = nullptr;
  GraphLaunch launch;
  {
    std::lock_guard<std::mutex> lock(graph_mutex_);
    auto it = graph_launches_.find(correlation_id);
    if (it == graph_launches_.end()) return 0;
    GraphLaunch& open = it->second;
    launch = open;
    const auto& kernels = open.recording->kernels;
    const size_t kind = WorkKind(kernel_name);
    size_t& next = open.next[kind];
    size_t position = kNone;
    auto known = graph_nodes_.find(node_id);
    if (known != graph_nodes_.end()) {
      instruction = known->second.instruction;
      position = known->second.position;
    } else {
      // Entries of other kinds in between do not count against the window.
      size_t seen = 0;
      for (size_t p = next; p < kernels.size() && seen < kLookahead; ++p) {
        if (WorkKind(kernels[p].first) != kind && !kernels[p].first.empty()) continue;
        ++seen;
        if (SameWork(kernels[p].first, kernel_name)) {
          position = p;
          break;
        }
      }
      if (position != kNone) {
        instruction = kernels[position].second;
        if (graph_nodes_.size() < (1u << 20)) {
          graph_nodes_.emplace(node_id, KnownNode{instruction, position});
        }
      }
    }
    // Work that matches nothing (not in the recording) keeps the position
    // for the next one.
    if (position != kNone && position + 1 > next) next = position + 1;
    bool done = true;
    for (size_t k = 0; k < kWorkKinds; ++k) done = done && open.next[k] >= open.recording->end[k];
    if (done) graph_launches_.erase(it);
  }
  if (instruction == nullptr) return 0;
  const gpu::ContextId context =
      Descend(launch.base, instruction, launch.module, State(true));
  if (context == launch.base) return 0;
  graph_kernels_placed_.fetch_add(1, std::memory_order_relaxed);
  return context;
}

}  // namespace deepcontext::xla
