// Tracks, per thread, the XLA ranges (NVTX domain "TSL") a thread is inside,
// and turns a GPU call's context into the context of the HLO operation the
// call belongs to:
//   Python line -> [forward|backward] -> scopes -> primitive -> HLO op
// or, for work done while XLA compiles or autotunes, the line that
// triggered the compilation -> [compile] -> module.
//
// The GPU backend feeds it from the runtime's own NVTX tool
// (runtime/cupti/nvtx_callbacks.cc, named as NVTX_INJECTION64_PATH) or from
// CUPTI's NVTX callbacks (CUPTI as the injection) and asks Refine() at
// every traced driver call, including the cuGraphAddNode calls by which XLA
// records its command buffers inside each instruction's range: graph
// kernels then carry their HLO operation too (measured, JAX 0.11.2).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/gpu/context_sink.h"
#include "runtime/xla/annotation.h"
#include "runtime/xla/hlo_sources.h"
#include "runtime/xla/op_path.h"
#include "runtime/xla/replay_contexts.h"

namespace deepcontext::xla {

// One distinct annotation, parsed once; addresses stay valid for the
// tracker's lifetime.
struct InternedAnnotation {
  Annotation annotation;
  std::vector<PathNode> path;  // nodes below the Python line (thunks, compiles)
  bool opens_compile = false;  // "XlaCompile": a module's whole compilation
};

// A string registered with the runtime's own NVTX tool: parsed once, when
// it is registered, so that a range naming it costs no lookup. Immutable;
// its address is the NVTX string handle and outlives every tracker.
class RegisteredString {
 public:
  explicit RegisteredString(std::string_view text);
  AnnotationKind kind() const { return kind_; }
  // Null for strings attribution does not use (compiler passes, others).
  const InternedAnnotation* interned() const { return interned_.get(); }

 private:
  AnnotationKind kind_ = AnnotationKind::kOther;
  std::unique_ptr<const InternedAnnotation> interned_;
};

// Parses `message` when attribution keeps it (instructions, modules,
// XlaCompile); null otherwise, with `kind` set either way.
std::unique_ptr<InternedAnnotation> InternAnnotation(std::string_view message,
                                                     AnnotationKind* kind);

class XlaRanges {
 public:
  // Whether a context is a thread's own node, with no Python frame below
  // it: work of XLA's compiler threads.
  using IsThreadRoot = bool (*)(gpu::ContextId);

  // `sources`: the source lines of compiled modules, when the Python
  // package registered them (placed between the phase and the scopes).
  XlaRanges(gpu::ContextSink& sink, IsThreadRoot is_thread_root,
            const HloSourceRegistry& sources = HloSourceRegistry::Global());
  ~XlaRanges();
  XlaRanges(const XlaRanges&) = delete;
  XlaRanges& operator=(const XlaRanges&) = delete;

  // NVTX events (domain handles and string handles as opaque numbers).
  void OnDomainCreated(uint64_t domain, std::string_view name);
  void OnStringRegistered(uint64_t handle, std::string_view text);
  // A range push with an ASCII message or a registered string. Returns
  // true when it opened this thread's outermost compilation: the caller
  // then passes the thread's current context to BeginCompile().
  bool Push(uint64_t domain, std::string_view message);
  bool PushRegistered(uint64_t domain, uint64_t string_handle);
  void Pop(uint64_t domain);
  // The same from the runtime's own NVTX tool, which filters domains itself.
  bool PushString(const RegisteredString& string);
  bool PushAscii(std::string_view message);
  void PopRange();
  void BeginCompile(gpu::ContextId origin);

  // The context a GPU call made now on this thread belongs to; `base` when
  // no XLA range applies.
  gpu::ContextId Refine(gpu::ContextId base);

  // Ranges ever seen (a cheap test before Refine on non-XLA programs).
  bool seen_ranges() const { return seen_.load(std::memory_order_relaxed); }
  // Instruction (Thunk) ranges entered so far.
  uint64_t op_ranges() const { return op_ranges_.load(std::memory_order_relaxed); }

  // Command buffers. A command XLA traces into its command buffer (stream
  // capture of, e.g., a cuBLAS GEMM) becomes a child graph whose kernels
  // run under node ids the backend never sees created or cloned. The first
  // recording of each command buffer lists the captured kernels in order
  // with their instruction; each launch of the command buffer then matches
  // its kernels of unknown nodes to that list in order (the next entry of
  // the same name within a few positions; a kernel matching none keeps the
  // position) and remembers the node for later launches.
  // A kernel launch (by name; "" matches any kernel), memset or copy
  // (gpu::kGraphMemsetName, kGraphMemcpyName) was captured into a graph
  // (the capturing thread).
  void OnCapturedKernel(std::string_view kernel_name);
  // A graph launch (the launching thread, `base` its unrefined context).
  void OnGraphLaunch(uint64_t correlation_id, gpu::ContextId base);
  // The instruction's context for a kernel of an unknown node of that
  // launch; 0 when none matches. [any thread]
  gpu::ContextId ResolveGraphKernel(uint64_t correlation_id, uint64_t node_id,
                                    std::string_view kernel_name);
  uint64_t graph_kernels_placed() const {
    return graph_kernels_placed_.load(std::memory_order_relaxed);
  }
  // Kernels recorded as captured into command buffers.
  uint64_t captured_kernels() const { return captured_kernels_.load(std::memory_order_relaxed); }

  // Where a record of a graph node created in `node_context` goes when its
  // graph was launched in `launch_context`: an XLA command buffer recorded
  // by one call and launched by another goes under the launching call, with
  // the path Refine() gave it (replay_contexts.h). [any thread]
  gpu::ContextId PlaceReplayed(gpu::ContextId node_context, gpu::ContextId launch_context) {
    // Programs without XLA (PyTorch's graphs) pay one load per record.
    if (!seen_ranges()) return node_context;
    return replays_.Place(node_context, launch_context);
  }
  // Records PlaceReplayed() moved to another call.
  uint64_t replayed_records_moved() const { return replays_.moved(); }

  // Counts (and, with `timed`, times) pushes, pops and refinements, for
  // DEEPCONTEXT_XLA_STATS=1: where the cost of following XLA's ranges goes.
  void EnableStats(bool timed);
  bool stats_timed() const { return stats_timed_; }
  // Adds time spent in NVTX calls outside this class (the tool's own part).
  void AddNvtxNs(uint64_t ns) { nvtx_ns_.fetch_add(ns, std::memory_order_relaxed); }
  // "gpu_xla_stats" when stats are on: counts and nanoseconds.
  std::string StatsLine() const;

 private:
  struct Entry {
    AnnotationKind kind = AnnotationKind::kOther;
    const InternedAnnotation* what = nullptr;
  };
  struct ThreadState;
  // Kernels, memsets ("<memset>") and copies ("<memcpy>") keep their own
  // positions: their records need not come in one order.
  static constexpr size_t kWorkKinds = 3;
  struct Recording {  // one command buffer's captured work, in order
    std::vector<std::pair<std::string, const InternedAnnotation*>> kernels;
    size_t end[kWorkKinds] = {};  // one past the last entry of each kind
    bool closed = false;  // its first recording ended
  };
  struct GraphLaunch {
    Recording* recording = nullptr;
    gpu::ContextId base = 0;
    const InternedAnnotation* module = nullptr;
    size_t next[kWorkKinds] = {};  // where the launch's next one of each kind is looked for
  };
  struct CompileOrigin {
    gpu::ContextId context = 0;
    const InternedAnnotation* module = nullptr;
    std::thread::id thread;
    uint64_t start_ns = 0;
  };
  // A whole compilation ended: its wall time goes to origin -> [compile] ->
  // module, beside the GPU time of its autotuning.
  void RecordCompileTime(const CompileOrigin& done, uint64_t end_ns);

  ThreadState* State(bool create);
  gpu::ContextId RefineNow(gpu::ContextId base);
  Entry Intern(std::string_view message);
  bool PushEntry(uint64_t domain, Entry entry);
  bool Tracked(uint64_t domain) const;
  gpu::ContextId Descend(gpu::ContextId base, const InternedAnnotation* what,
                         const InternedAnnotation* module, ThreadState* state);
  // The thunk's path with the source lines of its instruction in `module`;
  // the thunk itself when none are known.
  const InternedAnnotation* WithSources(const InternedAnnotation* thunk,
                                        const InternedAnnotation* module);
  gpu::ContextId CompileContext(gpu::ContextId base, const Entry& own,
                                ThreadState* state);

  gpu::ContextSink& sink_;
  IsThreadRoot is_thread_root_;
  const HloSourceRegistry& sources_;
  const uint64_t instance_;  // tells thread states of two trackers apart
  bool stats_ = false;
  bool stats_timed_ = false;
  std::atomic<uint64_t> pushes_{0}, refines_{0}, refine_misses_{0};
  std::atomic<uint64_t> nvtx_ns_{0}, refine_ns_{0};
  std::atomic<bool> seen_{false};
  std::atomic<uint64_t> op_ranges_{0};
  std::atomic<uint64_t> tsl_domain_{0};  // 0: not seen, every domain counts

  std::mutex mutex_;  // guards the tables below
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, std::unique_ptr<InternedAnnotation>, StringHash,
                     std::equal_to<>>
      interned_;
  std::unordered_map<uint64_t, Entry> registered_;
  // (module, thunk) -> the thunk's path with source lines.
  std::unordered_map<std::string, std::unique_ptr<InternedAnnotation>> with_sources_;
  std::vector<ThreadState*> threads_;  // freed with the tracker

  std::mutex graph_mutex_;  // guards the command-buffer tables
  // (module, command buffer instruction) -> its first recording.
  std::map<std::pair<const void*, const void*>, std::unique_ptr<Recording>> recordings_;
  std::unordered_map<uint64_t, GraphLaunch> graph_launches_;
  struct KnownNode {
    const InternedAnnotation* instruction = nullptr;
    size_t position = 0;  // in its command buffer's recording
  };
  std::unordered_map<uint64_t, KnownNode> graph_nodes_;
  std::atomic<uint64_t> graph_kernels_placed_{0};
  std::atomic<uint64_t> captured_kernels_{0};

  std::atomic<bool> compiling_{false};
  CompileOrigin compile_;  // under mutex_

  ReplayContexts replays_;
};

}  // namespace deepcontext::xla
