// CallPathBuilder's native call paths (--native): the native frames between
// Python lines and operators, and a GPU API call's frames inside an op,
// cached per stack so that an unwind of a known path costs no splicing; no
// capture names a frame (Named() does, when the frame is read).
#include <algorithm>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "runtime/common/hot_path.h"
#include "runtime/dlmonitor/call_path_builder.h"
#include "runtime/dlmonitor/call_path_thread_state.h"
#include "runtime/native/capture_stats.h"

namespace deepcontext::dlmonitor {

using call_path::InsidePathKey;
using call_path::IsGpuDriverModule;
using call_path::kCallerScan;
using call_path::kMaxNativeVariants;
using call_path::NativeCapture;
using call_path::NativePathKey;
using call_path::NativePathVariant;
using native::CaptureOutcome;
using native::CaptureSite;

namespace {

// Feeds one capture to DEEPCONTEXT_NATIVE_STATS (capture_stats.h); does
// nothing but read a flag when the statistics are off. The statistics' own
// work is out of line and cold, off the lines every capture runs on.
class CaptureTimer {
 public:
  // `resolver` names the modules of the frames walked (none: not counted).
  CaptureTimer(CaptureSite site, const void* thread, native::FrameResolver* resolver)
      : enabled_(native::CaptureStatsEnabled()), resolver_(resolver) {
    if (enabled_) Start(site, thread);
  }

  // `previous_anchor`: the index of the thread's previous capture among
  // the walk's anchors (-1: not among them).
  void Unwound(int captured, const native::AnchorUse& use, int previous_anchor,
               const uintptr_t* pcs) {
    if (enabled_) RecordUnwound(captured, use, previous_anchor, pcs);
  }

  void Interned(native::StackId stack) {
    if (enabled_) [[unlikely]] sample_.stack = stack;
  }

  // Why no trail answered a call inside an op (where not counted by
  // InsideTrails itself).
  void NoTrail(native::TrailOutcome why) {
    if (enabled_) [[unlikely]] native::RecordTrailOutcome(why);
  }

  // After the capture's time is taken, the modules of the frames it walked
  // (looked up by address range).
  void Finish(CaptureOutcome outcome) {
    if (enabled_) Record(outcome);
  }

 private:
  [[gnu::cold, gnu::noinline]] void Start(CaptureSite site, const void* thread) {
    sample_.site = site;
    sample_.thread = thread;
    start_ns_ = native::CaptureClockNs();
  }

  [[gnu::cold, gnu::noinline]] void RecordUnwound(int captured, const native::AnchorUse& use,
                                                  int previous_anchor, const uintptr_t* pcs) {
    sample_.unwind_ns = native::CaptureClockNs() - start_ns_;
    walked_pcs_ = pcs + use.copied;
    sample_.anchored = use.anchor >= 0;
    sample_.met_previous = use.anchor >= 0 && use.anchor == previous_anchor;
    sample_.copied = use.copied;
    sample_.walked = captured - use.copied;
  }

  [[gnu::cold, gnu::noinline]] void Record(CaptureOutcome outcome) {
    sample_.outcome = outcome;
    sample_.total_ns = native::CaptureClockNs() - start_ns_;
    native::RecordCapture(sample_);
    if (resolver_ == nullptr || walked_pcs_ == nullptr) return;
    std::string module;
    int run = 0;
    for (int i = 0; i < sample_.walked; ++i) {
      std::string next = resolver_->ModuleOf(walked_pcs_[i]);
      if (run > 0 && next != module) {
        native::RecordWalkedFrames(sample_.site, module, run);
        run = 0;
      }
      module = std::move(next);
      ++run;
    }
    native::RecordWalkedFrames(sample_.site, module, run);
  }

  const bool enabled_;
  native::FrameResolver* const resolver_;
  const uintptr_t* walked_pcs_ = nullptr;
  uint64_t start_ns_ = 0;
  native::CaptureSample sample_;
};

// Whether `known` holds `frames`, compared innermost first. One native
// stack (the interpreter calling an op's binding) is met under as many
// Python paths as the program has lines calling the op (a dozen for
// ResNet-50's convolutions), and those paths share their outer frames:
// compared outermost first, each path that is not the one sought cost a
// walk through the frames they share.
bool SamePythonFrames(const std::vector<python::RawFrame>& known,
                      const python::RawFrame* frames, int count) {
  if (known.size() != static_cast<size_t>(count)) return false;
  for (int i = count - 1; i >= 0; --i) {
    if (!(known[i] == frames[i])) return false;
  }
  return true;
}

}  // namespace

DEEPCONTEXT_HOT
ContextId CallPathBuilder::NativeContext(ThreadState& state, ContextId base,
                                         int start, const native::CallerFrame& caller,
                                         bool drop_caller_module,
                                         int* depth) {
  // Captured into the thread's anchor: ops nested in this one start their
  // unwinds from it. The previous op's entry stack is the anchor of this
  // capture: consecutive ops from one Python loop share most frames.
  CaptureTimer timer(CaptureSite::kOpEntry, &state, resolver_.get());
  uintptr_t* pcs = state.anchor_pcs;
  const int previous_count = state.anchor_count;
  const native::StackAnchor previous{state.anchor_pcs, state.anchor_sps,
                                     previous_count, /*live=*/false};
  native::AnchorUse use;
  int captured = 0;
  // An entry from the same caller frame after the same entry capture as a
  // recent one, whose trail to that capture still holds: the same frames,
  // written out, and the same stack (entry_trails.h).
  const bool trails = caller.cfa != 0 && state.anchor_stack != native::kNoStack &&
                      entry_trails_usable_.load(std::memory_order_relaxed);
  const EntryTrails::Key trail_key{state.anchor_stack, caller.pc, caller.cfa};
  native::StackId replayed = native::kNoStack;
  if (trails && state.entry_trails != nullptr) {
    replayed = state.entry_trails->Replay(trail_key, caller, previous, pcs, state.anchor_sps,
                                          &captured, &use.copied);
  }
  if (replayed != native::kNoStack) {
    use.anchor = 0;
    timer.Unwound(captured, native::AnchorUse{0, captured}, /*previous_anchor=*/0, pcs);
  } else {
    captured = unwinder_->CaptureNear(&previous, 1, pcs, state.anchor_sps,
                                      native::kMaxNativeDepth, &use, &caller);
    timer.Unwound(captured, use, /*previous_anchor=*/0, pcs);
  }
  // Frames inner of the reporting caller are this monitor's own (the
  // capture left them out where it could).
  int native_count = captured;
  for (int i = captured - 1; i >= 0 && i >= captured - kCallerScan; --i) {
    if (pcs[i] == caller.pc) {
      native_count = i + 1;
      break;
    }
  }
  // Every frame came from the previous entry stack: its id, unhashed.
  const bool same_stack = use.anchor == 0 && use.copied == native_count &&
                          native_count == previous_count &&
                          state.anchor_stack != native::kNoStack;
  const native::StackId stack = replayed != native::kNoStack ? replayed
                                : same_stack ? state.anchor_stack
                                             : stacks_.Intern(pcs, native_count);
  timer.Interned(stack);
  if (trails && replayed == native::kNoStack && use.anchor == 0 && native_count == captured &&
      stack != native::kNoStack) {
    KeepEntryTrail(state, trail_key, stack, caller, captured, use.copied);
  }
  state.last_native_stack = stack;
  state.anchor_stack = stack;
  state.anchor_count = stack != native::kNoStack ? native_count : 0;
  // The previous call's frames shared with the old anchor are shared with
  // the new one as far as this capture kept the old one's frames in place.
  state.inside_live_prefix =
      use.anchor == 0 ? std::min(state.inside_live_prefix, use.copied) : 0;
  if (stack == native::kNoStack) [[unlikely]] {
    timer.Finish(CaptureOutcome::kNoStack);
    return PythonContext(state, base, start, depth);
  }
  const call_path::BorrowedScratch<call_path::PythonCaptureBuffer> python_buffer(
      state.python_capture);
  python::RawFrame* python_frames = python_buffer->frames();
  bool truncated = false;
  state.last_python = PythonMark{};
  const int count =
      python_enabled_ ? CapturePython(python_frames, &truncated, &state.last_python) : 0;
  const python::RawFrame* frames = python_frames + (truncated ? 1 : 0);
  if (truncated && start == 0) [[unlikely]] base = TruncationMarker(base);
  const int first_python = std::min(start, count);

  const NativePathKey key{base, start, stack};
  // Found, not inserted: the insertion's code is NewNativePath's.
  if (const std::vector<NativePathVariant>* known = state.native_paths.Find(key)) {
    for (const NativePathVariant& variant : *known) {
      if (SamePythonFrames(variant.python, frames + first_python, count - first_python)) {
        *depth = variant.depth;
        timer.Finish(CaptureOutcome::kCachedPath);
        return variant.context;
      }
    }
  }
  const NativeCapture capture{pcs, native_count, frames, count, first_python};
  const ContextId context =
      NewNativePath(state, key, capture, caller, drop_caller_module, depth);
  timer.Finish(CaptureOutcome::kNewPath);
  return context;
}

ContextId CallPathBuilder::NewNativePath(ThreadState& state, const NativePathKey& key,
                                         const NativeCapture& capture,
                                         const native::CallerFrame& caller,
                                         bool drop_caller_module, int* depth) {
  const uintptr_t* const pcs = capture.pcs;
  const int native_count = capture.native_count;
  const python::RawFrame* const frames = capture.frames;
  const int count = capture.count;
  const int first_python = capture.first_python;
  // Resolve, splice, build the path.
  const call_path::BorrowedScratch<call_path::NativePathScratch> scratch(
      state.native_scratch);
  ResolvedPythonFrame* const resolved = scratch->resolved;
  bool* const entry = scratch->entry;
  for (int i = 0; i < count; ++i) {
    resolved[i] = python_.Lookup(frames[i], state.frame_cache);
    entry[i] = frames[i].entry;
  }
  int kept = count;
  while (kept > first_python && resolved[kept - 1].hidden) --kept;
  // The reporting adapter's own frames (its module) are not part of the
  // program's path either. Told by module (a range lookup, no symbolizing),
  // once per new path.
  int used = native_count;
  if (drop_caller_module) {
    const std::string caller_module = resolver_->ModuleOf(caller.pc);
    while (!caller_module.empty() && used > 0 &&
           resolver_->ModuleOf(pcs[used - 1]) == caller_module) {
      --used;
    }
  }
  native::NativeFrameClass* const classes = scratch->classes;
  interpreter_.ClassifyAll(pcs, used, classes);
  constexpr int kCapacity = call_path::NativePathScratch::kSpliceCapacity;
  native::SplicedFrame* const spliced = scratch->spliced;
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
  ContextId parent = key.base;
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
  return tree_.Child(parent, UnnamedNativeKey(pc));
}

FrameKey CallPathBuilder::Named(const FrameKey& key) {
  if (key.kind != kUnnamedNativeFrame || resolver_ == nullptr) return key;
  const uintptr_t pc = AddressOfUnnamedNative(key);
  {
    std::lock_guard<std::mutex> guard(native_keys_mutex_);
    auto it = native_keys_.find(pc);
    if (it != native_keys_.end()) return it->second;
  }
  // Named by function and source line where debug info has them, else by
  // function (or module+offset) and module path. Call sites of one
  // function without line information get one name, and their nodes one
  // node in the profile (runtime/profiler/profile_builder.cc).
  const native::PathCallTimer timer(native::PathCall::kFrameName);
  const native::SymbolizedFrame symbol = resolver_->Resolve(pc);
  FrameKey named;
  named.kind = DLMONITOR_FRAME_NATIVE;
  named.name = strings_.Intern(symbol.DisplayName());
  named.file = strings_.Intern(symbol.file.empty() ? symbol.module : symbol.file);
  named.line = symbol.file.empty() || symbol.line <= 0 ? 0 : static_cast<uint32_t>(symbol.line);
  std::lock_guard<std::mutex> guard(native_keys_mutex_);
  return native_keys_.emplace(pc, named).first->second;
}

DEEPCONTEXT_HOT
ContextId CallPathBuilder::InsideOpContext(ThreadState& state,
                                           const OpEntry& op,
                                           const native::CallerFrame& caller) {
  // Anchors: the thread's entry anchor when it is this op's entry stack
  // (a scope's op may have taken a newer one since): its frames outer of
  // the op's dispatch are still live. And the previous call's stack: a
  // launch like the previous one, from the same place, shares all but the
  // innermost frames with it.
  native::StackAnchor anchors[2];
  int anchor_count = 0;
  const bool entry_anchor =
      op.entry_stack == state.last_native_stack && state.anchor_count > 0;
  const native::StackAnchor live{state.anchor_pcs, state.anchor_sps, state.anchor_count,
                                 /*live=*/true};
  if (entry_anchor) anchors[anchor_count++] = live;
  CaptureTimer timer(CaptureSite::kInsideOp, &state, resolver_.get());
  // A call from the same caller frame in an op of the same context and
  // entry stack as a recent one, whose trail to the entry capture still
  // holds: the same frames, so the same answer, without unwinding
  // (inside_trails.h).
  const bool trails_usable = trails_usable_.load(std::memory_order_relaxed);
  const bool trails = entry_anchor && caller.cfa != 0 && trails_usable;
  const InsideTrails::Key trail_key{op.context, op.entry_stack, caller.pc, caller.cfa};
  if (trails && state.inside_trails != nullptr) {
    const ContextId answer = state.inside_trails->Answer(trail_key, caller, live);
    if (answer != kNoContext) {
      // The previous call's frames are not known now: the next unwind
      // goes to the op's entry capture.
      state.inside_count = 0;
      state.inside_answer = kNoContext;
      timer.Unwound(0, native::AnchorUse{}, -1, nullptr);
      timer.Finish(CaptureOutcome::kReused);
      return answer;
    }
  } else if (!entry_anchor && trails_usable) {
    timer.NoTrail(native::TrailOutcome::kNoEntryAnchor);
  }
  const int previous_anchor = anchor_count;
  const int previous_count = state.inside_count;
  if (previous_count > 0) {
    anchors[anchor_count++] = native::StackAnchor{
        state.inside_pcs, state.inside_sps, previous_count, /*live=*/false,
        /*live_prefix=*/entry_anchor ? state.inside_live_prefix : 0};
  }
  uintptr_t* pcs = state.inside_pcs;
  native::AnchorUse use;
  const int captured = unwinder_->CaptureNear(
      anchors, anchor_count, pcs, state.inside_sps, native::kMaxNativeDepth, &use,
      &caller);
  timer.Unwound(captured, use, previous_count > 0 ? previous_anchor : -1, pcs);
  int count = captured;  // frames inner of the caller are the monitor's
  for (int i = captured - 1; i >= 0 && i >= captured - kCallerScan; --i) {
    if (pcs[i] == caller.pc) {
      count = i + 1;
      break;
    }
  }
  state.inside_count = count;
  const ContextId previous_answer = state.inside_answer;
  state.inside_answer = kNoContext;  // until this call's is known
  // All frames are the previous call's (the walk met them at its innermost).
  const bool same_frames = use.anchor == previous_anchor && previous_count > 0 &&
                           use.copied == count && count == previous_count;
  if (same_frames && state.inside_op == op.context &&
      state.inside_entry == op.entry_stack && previous_answer != kNoContext) {
    state.inside_answer = previous_answer;
    if (trails) KeepInsideTrail(state, trail_key, previous_answer, caller, live);
    timer.Finish(CaptureOutcome::kReused);
    return previous_answer;  // the previous call's frames, in the same op
  }
  // How many outermost frames are the op's entry stack's (the key's first
  // part, not hashed again), and the id of the others. The previous call's
  // split describes the same frames against the same entry stack, and its
  // live prefix holds for them (NativeContext trims it with a new anchor).
  int copied = 0;
  native::StackId stack = native::kNoStack;
  if (same_frames && state.inside_entry == op.entry_stack &&
      state.inside_stack != native::kNoStack) {
    copied = state.inside_copied;
    stack = state.inside_stack;
  } else {
    state.inside_live_prefix = 0;
    if (entry_anchor && use.anchor == 0) {
      copied = use.copied;
      state.inside_live_prefix = copied;
    } else if (entry_anchor) {
      const int shared = std::min(count, state.anchor_count);
      while (copied < shared && pcs[copied] == state.anchor_pcs[copied] &&
             state.inside_sps[copied] == state.anchor_sps[copied]) {
        ++copied;
      }
      state.inside_live_prefix = copied;
      if (copied < 2) copied = 0;  // as a walk meets an anchor: two frames
    }
    if (copied >= count) copied = 0;  // nothing unwound: key the whole stack
    stack = stacks_.Intern(pcs + copied, count - copied);
  }
  timer.Interned(stack);
  state.inside_stack = stack;
  state.inside_copied = copied;
  if (stack == native::kNoStack) [[unlikely]] {
    timer.Finish(CaptureOutcome::kNoStack);
    return op.context;
  }
  const InsidePathKey key{op.context, copied > 0 ? op.entry_stack : native::kNoStack,
                          copied, stack};
  state.inside_op = op.context;
  state.inside_entry = op.entry_stack;
  if (const ContextId* known = state.inside_paths.Find(key)) {
    state.inside_answer = *known;
    if (trails) KeepInsideTrail(state, trail_key, *known, caller, live);
    timer.Finish(CaptureOutcome::kCachedPath);
    return *known;
  }
  state.inside_answer = NewInsidePath(state, op, key, pcs, count);
  if (trails) KeepInsideTrail(state, trail_key, state.inside_answer, caller, live);
  timer.Finish(CaptureOutcome::kNewPath);
  return state.inside_answer;
}

void CallPathBuilder::KeepEntryTrail(ThreadState& state, const EntryTrails::Key& key,
                                     native::StackId stack, const native::CallerFrame& caller,
                                     int count, int copied) {
  if (state.entry_trails == nullptr) state.entry_trails = std::make_unique<EntryTrails>();
  state.entry_trails->Keep(key, stack, caller, state.anchor_pcs, state.anchor_sps, count, copied);
}

void CallPathBuilder::KeepInsideTrail(ThreadState& state, const InsideTrails::Key& key,
                                      ContextId answer, const native::CallerFrame& caller,
                                      const native::StackAnchor& live) {
  if (state.inside_trails == nullptr) state.inside_trails = std::make_unique<InsideTrails>();
  state.inside_trails->Keep(key, answer, caller, live, state.inside_pcs, state.inside_sps,
                            state.inside_count);
}

ContextId CallPathBuilder::NewInsidePath(ThreadState& state, const OpEntry& op,
                                         const InsidePathKey& key, const uintptr_t* pcs,
                                         int count) {
  // The frames this call adds beyond the op's entry stack (they diverge
  // inside the op's dispatch), up to the first frame of the GPU driver or
  // tracing library.
  const std::span<const uintptr_t> entry = stacks_.Get(op.entry_stack);
  int first = 0;
  while (first < count && static_cast<size_t>(first) < entry.size() &&
         pcs[first] == entry[first]) {
    ++first;
  }
  int end = first;
  while (end < count && !IsGpuDriverModule(resolver_->ModuleOf(pcs[end]))) {
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
  state.inside_paths[key] = parent;
  return parent;
}

}  // namespace deepcontext::dlmonitor
