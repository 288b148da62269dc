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
#pragma once

#include <atomic>
#include <cstdint>

#include "deepcontext/dlmonitor.h"
#include "runtime/dlmonitor/context_tree.h"
#include "runtime/dlmonitor/forward_links.h"
#include "runtime/dlmonitor/python_frame_cache.h"
#include "runtime/dlmonitor/string_table.h"

namespace deepcontext::dlmonitor {

struct ThreadState;

class CallPathBuilder {
 public:
  // Deepest Python stack read per capture; deeper frames (the outermost
  // ones, beyond the innermost kMaxPythonDepth) are cut.
  static constexpr int kMaxPythonDepth = 256;

  CallPathBuilder(ContextTree& tree, StringTable& strings,
                  ForwardLinks& links, PythonFrameCache& python,
                  bool python_enabled);

  // Pushes the op on the calling thread's shadow stack and returns its
  // context. [any thread, no GIL]
  ContextId OnOpEnter(const dlmonitor_op_data_t& op);

  // Pops the op (and any ops above it whose exit was never reported) and
  // returns its context; kNoContext when the op is not on this thread's
  // stack. [any thread, no GIL]
  ContextId OnOpExit(const dlmonitor_op_data_t& op);

  // The context of the innermost active op, or of the current Python line
  // when no op is active. [any thread, no GIL]
  ContextId Current();

  // Forgets every thread's state (call in the child after fork: the
  // parent's threads and their stacks do not exist there).
  void ResetAfterFork();

 private:
  // The calling thread's state; nullptr while the thread is exiting.
  ThreadState* State();
  ContextId ThreadRoot(ThreadState& state);
  // Context of the thread's Python stack hung under `base`, keeping frames
  // from index `start` on; *depth receives the kept stack depth.
  ContextId PythonContext(ThreadState& state, ContextId base, int start,
                          int* depth);
  StringId InternOpName(ThreadState& state, const char* name);
  ContextId Phase(ContextId parent, StringId phase_name);

  ContextTree& tree_;
  StringTable& strings_;
  ForwardLinks& links_;
  PythonFrameCache& python_;
  const bool python_enabled_;
  const StringId forward_name_;
  const StringId backward_name_;
  std::atomic<uint64_t> generation_;
};

}  // namespace deepcontext::dlmonitor
