#include "runtime/native/native_stack.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "runtime/common/hot_path.h"
#include "runtime/native/cfi_rules.h"
#include "runtime/native/libgcc_walk.h"
#include "runtime/native/cfi_walk.h"

#if defined(DEEPCONTEXT_HAVE_LIBUNWIND)
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

namespace deepcontext::native {
namespace {

using internal::AnchorFrames;
using internal::LibgccUntilAnchor;
using internal::kMaxAnchors;
using internal::StackBounds;
using internal::ThreadStackBounds;
using internal::WalkCfiRules;

using internal::RawCapture;
using internal::ThisThreadUnwindState;
using internal::ThreadUnwindState;

// Frames of this file between the public entry points and the unwinder,
// plus room for `skip`, are captured into a private buffer first.
constexpr int kInternalSlack = RawCapture::kInternalSlack;
constexpr int kMaxSkip = RawCapture::kMaxSkip;
constexpr int kRawCapacity = RawCapture::kCapacity;

using UnwBacktraceFn = int (*)(void**, int);
#if defined(DEEPCONTEXT_HAVE_LIBUNWIND)
static_assert(std::is_same_v<decltype(&::unw_backtrace), UnwBacktraceFn>,
              "unw_backtrace changed its signature");
#endif

// nongnu libunwind's soname; LLVM's libunwind is libunwind.so.1 and has a
// different API, so it must not be picked up by accident.
constexpr const char* kLibunwindSoname = "libunwind.so.8";

UnwBacktraceFn LoadLibunwind() {
  static const UnwBacktraceFn fn = []() -> UnwBacktraceFn {
    void* handle = dlopen(kLibunwindSoname, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return nullptr;
    // Kept loaded for the process lifetime: captured stacks may still be
    // in flight on other threads.
    return reinterpret_cast<UnwBacktraceFn>(dlsym(handle, "unw_backtrace"));
  }();
  return fn;
}

bool PrimeGlibcBacktrace() {
  // The first backtrace() call dlopens libgcc_s; do it here rather than
  // inside a callback.
  static const bool primed = [] {
    void* frames[4];
    return backtrace(frames, 4) > 0;
  }();
  return primed;
}


}  // namespace

namespace internal {

const StackBounds& ThreadStackBounds() {
  static thread_local StackBounds bounds;
  if (!bounds.queried) {
    bounds.queried = true;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size > 0) {
        bounds.low = reinterpret_cast<uintptr_t>(addr);
        bounds.high = bounds.low + size;
        bounds.known = true;
      }
      pthread_attr_destroy(&attr);
    }
  }
  return bounds;
}

}  // namespace internal

namespace {

// Follows the chain of {saved frame pointer, return address} records that
// x86-64 and AArch64 code built with frame pointers keeps. Every link is
// checked (inside this thread's stack, aligned, strictly outward) so a
// frame-pointer-less function in between ends the walk instead of sending it
// into arbitrary memory. Reads caller frames outside any object, hence no
// ASan instrumentation.
__attribute__((noinline, no_sanitize("address"))) int WalkFramePointers(
    void** out, int max) {
  const StackBounds bounds = ThreadStackBounds();  // a copy: see WalkCfiRules
  auto fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  // Without known bounds, allow the walk to move at most this far per frame.
  constexpr uintptr_t kMaxFrameSize = uintptr_t{1} << 20;
  int n = 0;
  while (n < max) {
    if (fp == 0 || fp % sizeof(uintptr_t) != 0) break;
    if (bounds.known &&
        (fp < bounds.low || fp + 2 * sizeof(uintptr_t) > bounds.high)) {
      break;
    }
    const auto* record = reinterpret_cast<const uintptr_t*>(fp);
    const uintptr_t next = record[0];
    const uintptr_t ret = record[1];
    // A return address never points into the stack; a value that does
    // means `fp` was not a frame record.
    if (ret == 0 || (bounds.known && ret >= bounds.low && ret < bounds.high)) {
      break;
    }
    out[n++] = reinterpret_cast<void*>(ret);
    if (next <= fp) break;
    if (!bounds.known && next - fp > kMaxFrameSize) break;
    fp = next;
  }
  return n;
}

// Captures cfi-cache handed to libgcc (rare: counted on that path only).
std::atomic<uint64_t> g_cfi_fallbacks{0};

// `sps` (optional) receives each frame's stack address where the unwinder
// knows it; *have_sps says whether it did (cfi-cache without fallback).
DEEPCONTEXT_HOT
__attribute__((noinline)) int UnwindRaw(UnwinderKind kind, void** raw,
                                        uintptr_t* sps, bool* have_sps,
                                        int max, AnchorFrames* const* anchors,
                                        int anchor_count,
                                        ThreadUnwindState* thread,
                                        const CallerFrame* start) {
  int n = 0;
  *have_sps = false;
  switch (kind) {
    case UnwinderKind::kLibunwind: {
      const UnwBacktraceFn fn = LoadLibunwind();
      if (fn != nullptr) {
        n = fn(raw, max);
        break;
      }
      n = backtrace(raw, max);
      break;
    }
    case UnwinderKind::kGlibcBacktrace:
      n = backtrace(raw, max);
      break;
    case UnwinderKind::kFramePointer:
      n = WalkFramePointers(raw, max);
      break;
    case UnwinderKind::kCfiCache:
      n = WalkCfiRules(raw, sps, max, anchors, anchor_count,
                       thread != nullptr ? &thread->rules : nullptr,
                       thread != nullptr ? &thread->memo : nullptr, start);
      *have_sps = n >= 0;
      if (n < 0) {
        g_cfi_fallbacks.fetch_add(1, std::memory_order_relaxed);
        n = -1;
        // libgcc stops at a live anchor only: it has no stack slots to check.
        AnchorFrames* live = nullptr;
        for (int a = 0; a < anchor_count; ++a) {
          if (anchors[a] != nullptr) anchors[a]->met = -1;
          if (live == nullptr && anchors[a] != nullptr && !anchors[a]->verify &&
              anchors[a]->count > 0) {
            live = anchors[a];
          }
        }
        if (live != nullptr) n = LibgccUntilAnchor(raw, max, live);
        if (n < 0) {
          if (live != nullptr) live->met = -1;
          n = backtrace(raw, max);
        }
      }
      break;
  }
  // Keeps this call from being a tail call, so the frame layout the caller
  // relies on stays the same at every optimization level.
  asm volatile("" ::: "memory");
  return n < 0 ? 0 : n;
}

// CaptureFrom with the raw frames unwound into `scratch`. Inlined into
// both callers: a common capture adds no call between CaptureFrom and
// UnwindRaw.
__attribute__((always_inline)) inline int CaptureInto(RawCapture& scratch,
                                          ThreadUnwindState* thread,
                                          UnwinderKind kind,
                                          uintptr_t caller_return,
                                          uintptr_t* pcs, uintptr_t* sps,
                                          int max, int skip,
                                          AnchorFrames* const* anchors,
                                          int anchor_count,
                                          const CallerFrame* start) {
  for (int a = 0; a < anchor_count; ++a) {
    anchors[a]->met = -1;
    anchors[a]->copied = 0;
  }
  max = std::min(max, kMaxNativeDepth);
  skip = std::clamp(skip, 0, kMaxSkip);
  void** const raw = scratch.pcs;
  uintptr_t* const raw_sps = scratch.sps;
  bool have_sps = false;
  const int want = std::min(max + skip + kInternalSlack, kRawCapacity);
  const int n = UnwindRaw(kind, raw, sps != nullptr ? raw_sps : nullptr,
                          &have_sps, want, anchors, anchor_count, thread, start);
  // The anchor the walk met, if any: its outer frames are copied.
  AnchorFrames* anchor = nullptr;
  for (int a = 0; a < anchor_count; ++a) {
    if (anchors[a]->met >= 0) {
      anchor = anchors[a];
      break;
    }
  }
  // Some unwinders (libunwind on AArch64) report each caller frame by its
  // call site, the return address minus one; such frames are shifted back to
  // return addresses so every unwinder yields the same PCs.
  uintptr_t adjust = 0;
  int first = 0;
  const int scan = std::min(n, kInternalSlack);
  // Frames inner of start's pc go as well: where the walk began at start,
  // it is the first one.
  for (const uintptr_t cut : {start != nullptr ? start->pc : 0, caller_return}) {
    if (cut == 0) continue;
    for (first = 0; first < scan; ++first) {
      const auto pc = reinterpret_cast<uintptr_t>(raw[first]);
      if (pc == cut) break;
      if (pc + 1 == cut) {
        adjust = 1;
        break;
      }
    }
    if (first < scan) break;
  }
  // Not found (an unwinder that lost our own frames): keep what it saw.
  if (first == scan) first = 0;
  first += skip;
  const int walked = first < n ? n - first : 0;
  // The anchor's frames [0, met] are the outer part of this stack.
  const int from_anchor = anchor != nullptr ? anchor->met + 1 : 0;
  const int count = std::min(walked + from_anchor, max);
  // Innermost frames win: the anchor's outermost ones go first when the
  // stack is deeper than `max`.
  const int anchor_kept = std::max(count - walked, 0);
  const int anchor_start = from_anchor - anchor_kept;
  // Nothing to move when the output is the anchor's own arrays, in place.
  if (pcs != (anchor != nullptr ? anchor->pcs : nullptr) || anchor_start != 0) {
    for (int i = 0; i < anchor_kept; ++i) pcs[i] = anchor->pcs[anchor_start + i];
  }
  if (sps != nullptr && (sps != (anchor != nullptr ? anchor->sps : nullptr) || anchor_start != 0)) {
    for (int i = 0; i < anchor_kept; ++i) sps[i] = anchor->sps[anchor_start + i];
  }
  if (anchor != nullptr) anchor->copied = anchor_start == 0 ? anchor_kept : 0;
  // Innermost-first raw frames become outermost-first output.
  const int raw_kept = count - anchor_kept;
  for (int i = 0; i < raw_kept; ++i) {
    const int from = first + raw_kept - 1 - i;
    pcs[anchor_kept + i] = reinterpret_cast<uintptr_t>(raw[from]) + adjust;
    if (sps != nullptr) sps[anchor_kept + i] = have_sps ? raw_sps[from] : 0;
  }
  asm volatile("" ::: "memory");
  return count;
}

// A capture made while another one of this thread holds its RawCapture (a
// signal handler's, interrupting it), or while the thread exits: its raw
// frames go on the stack, the one place that needs neither. The frame is
// over the limit the capture path is built with (runtime/CMakeLists.txt),
// and probed page by page where stack clashes are guarded against; no
// common capture comes here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wframe-larger-than="
__attribute__((noinline, cold)) int CaptureOnStack(
    ThreadUnwindState* thread, UnwinderKind kind, uintptr_t caller_return,
    uintptr_t* pcs, uintptr_t* sps, int max, int skip,
    AnchorFrames* const* anchors, int anchor_count, const CallerFrame* start) {
  RawCapture scratch;
  const int n = CaptureInto(scratch, thread, kind, caller_return, pcs, sps, max,
                            skip, anchors, anchor_count, start);
  asm volatile("" ::: "memory");
  return n;
}
#pragma GCC diagnostic pop

// `caller_return` is the return address of the public entry point; every
// frame inside this file is innermost of it and is dropped. With `start`,
// frames inner of its pc are dropped instead (and the cfi-cache walk begins
// there). `sps` and `anchor` as for UnwindRaw; frames an anchor supplies
// are copied from it.
// Output may overwrite an anchor's own arrays: anchors are read only before
// any output is written, and copied frames move to lower indices. The raw
// frames go to the thread's RawCapture, not the stack: a frame that large
// is probed page by page on every call where the compiler guards against
// stack clashes (-fstack-clash-protection, Ubuntu's and Fedora's default).
DEEPCONTEXT_HOT
__attribute__((noinline)) int CaptureFrom(UnwinderKind kind,
                                          uintptr_t caller_return,
                                          uintptr_t* pcs, uintptr_t* sps,
                                          int max, int skip,
                                          AnchorFrames* const* anchors,
                                          int anchor_count,
                                          const CallerFrame* start = nullptr) {
  if (pcs == nullptr || max <= 0) return 0;
  if (start != nullptr && start->pc == 0) start = nullptr;
  // One thread-local lookup for the buffer, the rule cache and the memo.
  ThreadUnwindState* const thread = ThisThreadUnwindState();
  RawCapture* const scratch = thread != nullptr ? &thread->capture : nullptr;
  if (scratch == nullptr || scratch->held) [[unlikely]] {
    return CaptureOnStack(thread, kind, caller_return, pcs, sps, max, skip,
                          anchors, anchor_count, start);
  }
  // Ordered against a signal handler of this thread only.
  scratch->held = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const int n = CaptureInto(*scratch, thread, kind, caller_return, pcs, sps,
                            max, skip, anchors, anchor_count, start);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  scratch->held = false;
  return n;
}

}  // namespace

const char* UnwinderKindName(UnwinderKind kind) {
  switch (kind) {
    case UnwinderKind::kLibunwind:
      return "libunwind";
    case UnwinderKind::kGlibcBacktrace:
      return "glibc-backtrace";
    case UnwinderKind::kFramePointer:
      return "frame-pointer";
    case UnwinderKind::kCfiCache:
      return "cfi-cache";
  }
  return "unknown";
}

bool ParseUnwinderKind(std::string_view name, UnwinderKind* kind) {
  for (UnwinderKind k :
       {UnwinderKind::kLibunwind, UnwinderKind::kGlibcBacktrace,
        UnwinderKind::kFramePointer, UnwinderKind::kCfiCache}) {
    if (name == UnwinderKindName(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

bool UnwinderAvailable(UnwinderKind kind) {
  switch (kind) {
    case UnwinderKind::kLibunwind:
      return LoadLibunwind() != nullptr;
    case UnwinderKind::kGlibcBacktrace:
      return PrimeGlibcBacktrace();
    case UnwinderKind::kFramePointer:
      return true;
    case UnwinderKind::kCfiCache:
      // Its fallback for frames it does not model is backtrace().
      return CfiRulesSupported() && PrimeGlibcBacktrace();
  }
  return false;
}

Unwinder::Unwinder(UnwinderKind kind) : kind_(kind) {
  if (!UnwinderAvailable(kind_)) {
    // Fastest first among the complete ones (the frame-pointer walk is not).
    kind_ = UnwinderKind::kGlibcBacktrace;
    for (UnwinderKind candidate :
         {UnwinderKind::kCfiCache, UnwinderKind::kLibunwind}) {
      if (UnwinderAvailable(candidate)) {
        kind_ = candidate;
        break;
      }
    }
  }
  if (kind_ == UnwinderKind::kGlibcBacktrace ||
      kind_ == UnwinderKind::kCfiCache) {
    PrimeGlibcBacktrace();
  }
}

const Unwinder& Unwinder::Default() {
  // The default is cached .eh_frame rules where they are supported (x86-64,
  // AArch64), whether or not libunwind is installed: a capture there stops
  // where the stack meets the previous capture's frames and replays
  // repeated walks, where unw_backtrace walks the whole stack each time
  // (3.7x the time per op entry, 4.6x with a GPU call inside each op;
  // bench/event_cost.cc).
  // DEEPCONTEXT_UNWINDER names one (UnwinderKindName) to compare them on a
  // workload; an unknown or unavailable name gets the best available.
  static const Unwinder unwinder([] {
    UnwinderKind kind = UnwinderKind::kCfiCache;
    const char* wanted = getenv("DEEPCONTEXT_UNWINDER");
    if (wanted != nullptr && !ParseUnwinderKind(wanted, &kind)) {
      kind = UnwinderKind::kCfiCache;
    }
    return kind;
  }());
  return unwinder;
}

__attribute__((noinline)) int Unwinder::Capture(uintptr_t* pcs, int max,
                                                int skip) const {
  const int n =
      CaptureFrom(kind_, reinterpret_cast<uintptr_t>(__builtin_return_address(0)),
                  pcs, nullptr, max, skip, nullptr, 0);
  asm volatile("" ::: "memory");
  return n;
}

__attribute__((noinline)) int Unwinder::CaptureWithStackPointers(
    uintptr_t* pcs, uintptr_t* sps, int max) const {
  const int n =
      CaptureFrom(kind_, reinterpret_cast<uintptr_t>(__builtin_return_address(0)),
                  pcs, sps, max, 0, nullptr, 0);
  asm volatile("" ::: "memory");
  return n;
}

__attribute__((noinline)) int Unwinder::CaptureWithin(
    const uintptr_t* anchor_pcs, const uintptr_t* anchor_sps, int anchor_count,
    uintptr_t* pcs, int max, int* copied) const {
  AnchorFrames anchor;
  anchor.pcs = anchor_pcs;
  anchor.sps = anchor_sps;
  anchor.count = anchor_pcs != nullptr && anchor_sps != nullptr
                     ? std::clamp(anchor_count, 0, kMaxNativeDepth)
                     : 0;
  AnchorFrames* const anchors[] = {&anchor};
  const int n =
      CaptureFrom(kind_, reinterpret_cast<uintptr_t>(__builtin_return_address(0)),
                  pcs, nullptr, max, 0, anchors, anchor.count > 0 ? 1 : 0);
  if (copied != nullptr) *copied = anchor.copied;
  asm volatile("" ::: "memory");
  return n;
}

DEEPCONTEXT_HOT
__attribute__((noinline)) int Unwinder::CaptureNear(const StackAnchor* anchors,
                                                    int anchor_count, uintptr_t* pcs,
                                                    uintptr_t* sps, int max,
                                                    AnchorUse* use,
                                                    const CallerFrame* start) const {
  AnchorFrames frames[kMaxAnchors];
  AnchorFrames* pointers[kMaxAnchors];
  int used = 0;
  for (int a = 0; a < anchor_count && used < kMaxAnchors; ++a) {
    const StackAnchor& given = anchors[a];
    if (given.pcs == nullptr || given.sps == nullptr || given.count <= 0) continue;
    frames[used].pcs = given.pcs;
    frames[used].sps = given.sps;
    frames[used].count = std::min(given.count, kMaxNativeDepth);
    frames[used].verify = !given.live;
    frames[used].live_prefix =
        given.live ? 0 : std::clamp(given.live_prefix, 0, frames[used].count);
    pointers[used] = &frames[used];
    ++used;
  }
  const int n =
      CaptureFrom(kind_, reinterpret_cast<uintptr_t>(__builtin_return_address(0)),
                  pcs, sps, max, 0, pointers, used, start);
  if (use != nullptr) {
    *use = AnchorUse{};
    for (int a = 0, given = 0; a < anchor_count && given < used; ++a) {
      if (anchors[a].pcs == nullptr || anchors[a].sps == nullptr || anchors[a].count <= 0) {
        continue;
      }
      if (frames[given].met >= 0) {
        use->anchor = a;
        use->copied = frames[given].copied;
        break;
      }
      ++given;
    }
  }
  asm volatile("" ::: "memory");
  return n;
}

CfiUnwindStats CfiUnwindStatistics() {
  CfiUnwindStats stats;
  stats.rules_cached = CfiRuleCacheSize();
  stats.libgcc_fallbacks = g_cfi_fallbacks.load(std::memory_order_relaxed);
  return stats;
}

__attribute__((noinline)) int CaptureNativeStack(uintptr_t* pcs, int max,
                                                 int skip) {
  const int n = CaptureFrom(
      Unwinder::Default().kind(),
      reinterpret_cast<uintptr_t>(__builtin_return_address(0)), pcs, nullptr,
      max, skip, nullptr, 0);
  asm volatile("" ::: "memory");
  return n;
}

}  // namespace deepcontext::native
