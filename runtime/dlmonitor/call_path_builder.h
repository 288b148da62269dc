// Assembles the unified calling context of the current thread:
//
//   thread -> Python frames -> [user scope -> Python frames ...]
//          -> [forward] -> operator -> nested operators
//   forward context of the op -> [backward] -> backward function -> operators
//
// Each thread keeps a shadow stack of the framework ops it is inside. Only
// an op entered directly from Python (empty stack, or inside a user scope)
// reads Python frames; ops nested in another op reuse the parent's context,
// since the framework called them from C++. Python paths are cached per
// thread: only the part that differs from the previous capture is resolved
// and looked up in the tree (call-path caching).
//
// An op whose implementation runs Python again (a torch.autograd.Function,
// torch.compile's generated code) is seen by the innermost Python frame
// having changed since the op was entered: ops and GPU calls made from
// there read the frames past the op's and hang below them:
//
//   line -> Torch-Compiled Region -> <frames> -> [forward] -> CompiledFunction
//        -> call (/tmp/torchinductor_*/...py:12) -> cuLaunchKernel -> kernel
//
// Frames an adapter marks as compilation (Dynamo, Inductor's code
// generation, autotuning) put their work below a [compile] phase.
//
// With native frames enabled (dlmonitor_native_enable), an op entered from
// Python also captures the thread's native stack: the path then reads
// Python frames -> native frames -> op, the Python frames standing in place
// of the interpreter's eval-loop frames (runtime/native/python_splice.h).
// Native frames outer of the outermost Python frame (process start-up:
// _start, __libc_start_main, main) are left out. Each distinct (base,
// native stack, Python frames) is spliced once, its native frames keyed by
// return address and named only when read (Named()); afterwards an op
// costs one unwind, one intern and one hash lookup.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "deepcontext/dlmonitor.h"
#include "runtime/common/ended_elsewhere.h"
#include "runtime/dlmonitor/child_cache.h"
#include "runtime/dlmonitor/context_tree.h"
#include "runtime/dlmonitor/entry_trails.h"
#include "runtime/dlmonitor/forward_links.h"
#include "runtime/dlmonitor/inside_trails.h"
#include "runtime/dlmonitor/python_frame_cache.h"
#include "runtime/dlmonitor/string_table.h"
#include "runtime/native/frame_resolver.h"
#include "runtime/native/native_stack.h"
#include "runtime/native/python_splice.h"
#include "runtime/native/stack_cache.h"

namespace deepcontext::dlmonitor {

struct ThreadState;
struct OpEntry;
namespace call_path {
struct NativeCapture;
struct NativePathKey;
struct InsidePathKey;
}  // namespace call_path
struct PythonMark;
struct OpNameCacheEntry;

class CallPathBuilder {
 public:
  // Deepest Python stack read per capture; deeper frames (the outermost
  // ones, beyond the innermost kMaxPythonDepth) are cut, and a Python frame
  // named kTruncatedPythonName stands in for them at the top of the path.
  static constexpr int kMaxPythonDepth = 256;
  static constexpr const char* kTruncatedPythonName =
      "[outer Python frames beyond 256 not recorded]";

  CallPathBuilder(ContextTree& tree, StringTable& strings,
                  ForwardLinks& links, PythonFrameCache& python,
                  bool python_enabled);

  ~CallPathBuilder();

  // Pushes the op on the calling thread's shadow stack and returns its
  // context. `caller` is the frame of the monitor's entry point that the
  // adapter reporting the op called (DEEPCONTEXT_CALLER_FRAME): native
  // frames inner of its return address are the monitor's own, and the
  // innermost frames in the adapter's module are the adapter's; both are
  // left out, and native captures start their walk there. Its pc 0 means
  // the caller of OnOpEnter, whose frames are kept. [any thread, no GIL]
  ContextId OnOpEnter(const dlmonitor_op_data_t& op,
                      const native::CallerFrame& caller = {});

  // Turns native frames in op paths on or off. The first call picks the
  // unwinder and finds the interpreter's code (not async-signal-safe; call
  // it at start-up). Returns the unwinder's name. [any thread]
  const char* EnableNative(bool on);
  bool native_enabled() const {
    return native_enabled_.load(std::memory_order_relaxed);
  }

  // Pops the op (and any ops above it whose exit was never reported) and
  // returns its context; kNoContext when the op is not on this thread's
  // stack. An op another thread started (op.thread_id) is taken off that
  // thread's stack at its next op entry or GPU call (EndedElsewhere); its
  // exit here has no context. [any thread, no GIL]
  ContextId OnOpExit(const dlmonitor_op_data_t& op);

  // The context of the innermost active op, or of the current Python line
  // when no op is active. With native frames on, a call from inside an op
  // (a GPU API call) also gets the native frames it runs in beyond the op's
  // entry: op -> at::native::... -> cublas... -> (GPU API node added by the
  // caller). `caller` is the frame of the monitor's entry point that the
  // caller (the GPU backend) called; frames inner of its return address,
  // and from the first GPU driver/CUPTI frame on, are left out. Its pc 0
  // means the caller of Current. [any thread, no GIL]
  ContextId Current(const native::CallerFrame& caller = {});

  // The "[allocated before profiling]" node under Current(caller): where
  // memory that was live before profiling began is charged, under the line
  // that started profiling. [any thread, no GIL]
  ContextId AllocatedBefore(const native::CallerFrame& caller = {});

  // Forgets every thread's state (call in the child after fork: the
  // parent's threads and their stacks do not exist there).
  void ResetAfterFork();

  // `key` as readers see it: a native frame, which a capture keys by its
  // return address, gets its name (function, file, line) here. Naming one
  // takes tens of µs, and the first in a library tens of ms (its symbol
  // table, or its debug information with libdw), which the thread that
  // captured it should not pay: so it waits until the frame is read, by
  // a profile write or through the DLMonitor ABI. Every other key comes
  // back as it is. [any thread]
  FrameKey Named(const FrameKey& key);

 private:
  // The calling thread's state; nullptr while the thread is exiting.
  ThreadState* State();
  ContextId ThreadRoot(ThreadState& state);
  [[gnu::noinline, gnu::cold]] ContextId MakeThreadRoot(ThreadState& state);
  // Whether another thread ended ops of this one since it last looked.
  bool EndsPosted(const ThreadState& state) const;
  // Takes those ops off the thread's stack, wherever they stand in it:
  // ops entered above one while it was open keep their place.
  [[gnu::noinline, gnu::cold]] void TakeEndedElsewhere(ThreadState& state);
  // Where native frames of an op entered from Python are cut (OnOpEnter's
  // caller, and whether the adapter reported the op).
  struct NativeCaller {
    native::CallerFrame frame;
    bool drop_caller_module;
  };
  // The context an op entry hangs from when entered from Python: Python
  // frames (and native ones when `native` is given and native frames are
  // on) under `top` or the thread's root. Records in `into` where the
  // thread stood. Out of line: OnOpEnter asks it from several branches.
  [[gnu::noinline]] ContextId EntryPythonContext(ThreadState& state, const OpEntry* top,
                                                 OpEntry& into, const NativeCaller* native);
  // Captures the innermost kMaxPythonDepth Python frames into frames (room
  // for kMaxPythonDepth + 1), outermost first from frames[*truncated ? 1 :
  // 0]; *truncated when outer frames were cut. Returns the count kept, and
  // leaves in *mark where the stack stood.
  static int CapturePython(python::RawFrame* frames, bool* truncated, PythonMark* mark);
  // The marker child of base standing for cut outer frames.
  [[gnu::noinline, gnu::cold]] ContextId TruncationMarker(ContextId base);
  // Context of the thread's Python stack hung under `base`, keeping frames
  // from index `start` on; *depth receives the kept stack depth. The first
  // compilation frame (PythonFrameCache::MarkCompileFrames) among them
  // gets a [compile] phase node before it, unless `base_in_compile`.
  // Leaves what it saw in state.last_python and state.last_in_compile.
  ContextId PythonContext(ThreadState& state, ContextId base, int start,
                          int* depth, bool base_in_compile = false);
  // Records the calling thread's Python position in `entry` (a full
  // capture, for entries whose context was found without one).
  void MarkPython(ThreadState& state, OpEntry& entry) const;
  // True when Python code runs inside `top`: the thread's innermost frame
  // is not the one the entry was pushed from. One frame is read.
  bool PythonInside(const OpEntry& top) const;
  // Like PythonContext, with the native stack spliced in (see the top of
  // this file); falls back to PythonContext when no stack was captured.
  ContextId NativeContext(ThreadState& state, ContextId base, int start,
                          const native::CallerFrame& caller, bool drop_caller_module,
                          int* depth);
  // A native path first seen: resolves, splices and builds it under
  // key.base, and caches it. Out of line and cold, so that the code of a
  // capture that finds its path stays on few cache lines: the step's own
  // work between two ops evicts it.
  [[gnu::noinline, gnu::cold]] ContextId NewNativePath(
      ThreadState& state, const call_path::NativePathKey& key,
      const call_path::NativeCapture& capture, const native::CallerFrame& caller,
      bool drop_caller_module, int* depth);
  // Current() inside an op with a captured entry stack (cached per thread
  // by (op context, stack)).
  ContextId InsideOpContext(ThreadState& state, const OpEntry& op,
                            const native::CallerFrame& caller);
  // A GPU API call's path first seen inside `op` (the `count` frames of
  // `pcs`): built below the op and cached under `key`. Out of line, as
  // NewNativePath.
  [[gnu::noinline, gnu::cold]] ContextId NewInsidePath(
      ThreadState& state, const OpEntry& op, const call_path::InsidePathKey& key,
      const uintptr_t* pcs, int count);
  // Keeps `answer` of a call inside an op with the trail that proves it for
  // the next call from the same frame (inside_trails.h). Out of line, as
  // NewNativePath: it steps by rule.
  [[gnu::noinline, gnu::cold]] void KeepInsideTrail(ThreadState& state,
                                                    const InsideTrails::Key& key,
                                                    ContextId answer,
                                                    const native::CallerFrame& caller,
                                                    const native::StackAnchor& live);
  // Keeps an op entry's `stack` with the trail that proves it for the next
  // entry from the same frame after the same entry capture
  // (entry_trails.h). Out of line: it steps by rule.
  [[gnu::noinline, gnu::cold]] void KeepEntryTrail(ThreadState& state,
                                                   const EntryTrails::Key& key,
                                                   native::StackId stack,
                                                   const native::CallerFrame& caller, int count,
                                                   int copied);
  // The tree node of `pc` under `parent`, keyed by the address (Named()).
  ContextId NativeChild(ContextId parent, uintptr_t pc);
  StringId InternOpName(ThreadState& state, const char* name);
  // A name not in the thread's cache at its address: out of the op path
  // (runtime/common/hot_path.h).
  [[gnu::noinline, gnu::cold]] StringId InternNewOpName(
      ThreadState& state, const char* name, OpNameCacheEntry& cached);
  // A phase node (compile, allocated before): rare, out of line.
  [[gnu::noinline, gnu::cold]] ContextId Phase(ContextId parent, StringId phase_name);
  // tree_.Child(parent, key) through the thread's cache of recent answers.
  ContextId CachedChild(ThreadState& state, ContextId parent,
                        const FrameKey& key);
  // The tree's answer, remembered in `slot`: out of the op path.
  [[gnu::noinline, gnu::cold]] ContextId UncachedChild(
      ChildCache::Entry& slot, ContextId parent, const FrameKey& key);

  // What every op's entry and exit reads of the builder, on one cache
  // line: the step's own work between two ops evicts it.
  alignas(64) std::atomic<uint64_t> generation_;
  const bool python_enabled_;
  // Native frames: set up by the first EnableNative, then read-only.
  std::atomic<bool> native_enabled_{false};
  const StringId forward_name_;
  const StringId backward_name_;
  const StringId allocated_before_name_;
  const StringId truncated_name_;
  const StringId compile_name_;
  ContextTree& tree_;
  ForwardLinks& links_;
  PythonFrameCache& python_;
  EndedElsewhere ended_elsewhere_;  // its post count first

  StringTable& strings_;
  std::once_flag native_once_;
  // Unwinder::Default(), kept: constructing an Unwinder checks that its
  // kind is available, three guarded statics per capture.
  const native::Unwinder* unwinder_ = nullptr;
  // Calls inside ops may be answered by trails (InsideOpContext): only the
  // cfi-cache unwinder gives anchors the stack addresses trails meet. Set
  // at every EnableNative(true), so that one process can time regions with
  // and without them.
  std::atomic<bool> trails_usable_{false};
  // Op entries may be answered by trails too (NativeContext); cfi-cache
  // only, DEEPCONTEXT_ENTRY_TRAILS=0 turns them off. Set at every
  // EnableNative(true).
  std::atomic<bool> entry_trails_usable_{false};
  native::InterpreterRanges interpreter_;
  native::StackTable stacks_;
  std::unique_ptr<native::FrameResolver> resolver_;
  std::mutex native_keys_mutex_;  // guards native_keys_
  std::unordered_map<uintptr_t, FrameKey> native_keys_;  // names by address
};

}  // namespace deepcontext::dlmonitor
