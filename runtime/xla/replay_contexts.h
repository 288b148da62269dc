// Where the work of an XLA command buffer's node goes when the command
// buffer is launched by another call than the one that recorded it.
//
// XLA records a jitted executable's command buffer (a CUDA graph) once, at
// its first run, on the calling thread: each node's context is that call's
// Python context followed by the path XlaRanges::Refine() added (phase,
// source lines of the jitted function, scopes, primitive, HLO instruction).
// Later runs only launch the graph (cuGraphLaunch inside
// Thunk:#hlo_op=command_buffer_N#), from wherever the program calls the
// function: a training loop's steps would otherwise all stay under the
// warm-up call that recorded it.
//
// Refine() tells this class, whenever it computes a context for an
// instruction (a cache miss, not every call), the Python context it started
// from and the path below it. A record of a graph node is then re-rooted
// from the recording call's Python context onto the launching call's, both
// read from the contexts the backend already keeps per node and per launch:
// nothing more is stored on the application threads. Contexts not made by
// Refine() (PyTorch's captured graphs, launches outside XLA's ranges) stay
// where they are.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/gpu/context_sink.h"
#include "runtime/xla/op_path.h"

namespace deepcontext::xla {

class ReplayContexts {
 public:
  // Contexts remembered at most (distinct line and instruction pairs;
  // beyond it new ones are not re-rooted).
  static constexpr size_t kMaxRemembered = size_t{1} << 16;

  // Whether a context is a thread's own node, with no Python frame below
  // it (XLA's own threads).
  using IsThreadRoot = bool (*)(gpu::ContextId);

  // `sink` must outlive this object. Launches from a thread root (null:
  // none is) do not take records away from the recording call's line.
  explicit ReplayContexts(gpu::ContextSink& sink, IsThreadRoot is_thread_root = nullptr)
      : sink_(sink), is_thread_root_(is_thread_root) {}
  ReplayContexts(const ReplayContexts&) = delete;
  ReplayContexts& operator=(const ReplayContexts&) = delete;

  // Refine() made `refined` by walking `path` below `base`. `path` must
  // outlive this object. [any thread]
  void Remember(gpu::ContextId refined, gpu::ContextId base, const std::vector<PathNode>* path);

  // The context for a record of a graph node created in `node_context`
  // whose graph was launched in `launch_context`: when both were made by
  // Refine() on different Python contexts, the node's path below the
  // launch's Python context; otherwise (also for a launch from a thread
  // root) `node_context`. [any thread; meant
  // for the record-processing thread, with a bounded cache]
  gpu::ContextId Place(gpu::ContextId node_context, gpu::ContextId launch_context);

  // Records placed under another call than the one that recorded them.
  uint64_t moved() const { return moved_.load(std::memory_order_relaxed); }
  size_t remembered() const;

 private:
  struct Origin {
    gpu::ContextId base = 0;
    const std::vector<PathNode>* path = nullptr;
  };
  struct Slot {
    gpu::ContextId node = 0;
    gpu::ContextId launch = 0;
    gpu::ContextId result = 0;
  };
  bool Find(gpu::ContextId refined, Origin* origin) const;
  gpu::ContextId Compute(gpu::ContextId node_context, gpu::ContextId launch_context);

  gpu::ContextSink& sink_;
  const IsThreadRoot is_thread_root_;

  mutable std::mutex origins_mutex_;  // guards origins_
  std::unordered_map<gpu::ContextId, Origin> origins_;

  std::mutex cache_mutex_;  // guards cache_
  // (node context, launch context) -> where its records go. Direct-mapped:
  // a training step has as many distinct nodes as instructions, and few
  // calling lines.
  std::array<Slot, 4096> cache_{};

  std::atomic<uint64_t> moved_{0};
};

}  // namespace deepcontext::xla
