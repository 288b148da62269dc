// Captures the calling thread's native (C/C++) return addresses.
//
// Capture sits on the op / GPU-API callback path, so it never allocates
// (after the first call on a thread), never takes the GIL and never
// symbolizes: it records raw return addresses, which the symbolizer turns
// into names at exit. Three unwinders exist because none is available or
// complete everywhere:
//   - libunwind (nongnu, libunwind.so.8) via unw_backtrace: DWARF CFI based,
//     correct without frame pointers, fast thanks to its per-thread frame
//     cache. It is loaded with dlopen(RTLD_LOCAL) rather than linked: the
//     library also exports _Unwind_RaiseException & co., and linking it into
//     an injected runtime would reroute the C++ exceptions of the whole
//     profiled process through it.
//   - glibc backtrace(): libgcc's DWARF unwinder; always present, correct,
//     but several times slower.
//   - frame pointers: fastest, yet only as complete as the least
//     frame-pointer-friendly library on the stack (CPython before 3.15 and the
//     torch / jaxlib wheels omit them), so it is never the default.
#pragma once

#include <cstdint>
#include <string_view>

namespace deepcontext::native {

// Deepest native stack kept per capture (innermost frames win).
inline constexpr int kMaxNativeDepth = 256;

enum class UnwinderKind : uint8_t {
  kLibunwind = 0,
  kGlibcBacktrace = 1,
  kFramePointer = 2,
  // .eh_frame rules cached per pc (cfi_rules.h); frames it does not model
  // make that capture use glibc backtrace().
  kCfiCache = 3,
};

// "libunwind", "glibc-backtrace", "frame-pointer" or "cfi-cache": the name recorded in a
// profile's metadata.
const char* UnwinderKindName(UnwinderKind kind);

// Parses a name written by UnwinderKindName; false when unknown.
bool ParseUnwinderKind(std::string_view name, UnwinderKind* kind);

// Whether `kind` works in this process. The first call for kLibunwind tries
// to load libunwind.so.8 (not async-signal-safe; call it at start-up).
bool UnwinderAvailable(UnwinderKind kind);

// An earlier capture of the calling thread (Unwinder::CaptureNear):
// frames outermost first with their stack addresses (from
// CaptureWithStackPointers or CaptureNear).
struct StackAnchor {
  const uintptr_t* pcs = nullptr;
  const uintptr_t* sps = nullptr;
  int count = 0;
  // Known to be still on the stack, e.g. the entry capture of an op that is
  // still running: meeting two consecutive frames is enough.
  bool live = false;
  // For an anchor not live: its outermost `live_prefix` frames are those of
  // a live anchor given with it (the same return addresses at the same
  // stack addresses), e.g. a previous call's frames copied from the op's
  // entry capture. Two consecutive of them found in place vouch for the
  // ones outer of them, as meeting a live anchor does: a meeting point's
  // check stops there instead of reading every outer frame.
  int live_prefix = 0;
};

// A frame of the capturing thread a walk may start at instead of its own
// innermost one, taken with DEEPCONTEXT_CALLER_FRAME() by a function on the
// path to the capture (an entry point of the runtime): the return address
// into that function's caller, the function's CFA (the caller's stack
// pointer once it returns) and the caller's frame-pointer register (saved
// by the function's prologue). Frames inner of it, the runtime's own, are
// neither walked nor kept. pc 0: none.
struct CallerFrame {
  uintptr_t pc = 0;
  uintptr_t cfa = 0;
  uintptr_t fp = 0;
#if defined(__aarch64__)
  // The end of the function's frame record {x29, x30}, whose second word
  // holds pc (the return address a call left in x30): the frame's stack
  // address for the cfi-cache walk. On x86-64 that is cfa, above the
  // return address the call pushed.
  uintptr_t record_end = 0;
#endif
};

// The calling function's CallerFrame. A macro: the builtins name the
// function they are written in (an inlined helper's would name its caller's
// frame or its own, depending on inlining). __builtin_frame_address(0)
// gives the function a frame record, whose first word is the caller's
// saved frame pointer (and, on AArch64, whose second is the saved x30).
#if defined(__aarch64__)
#define DEEPCONTEXT_CALLER_FRAME()                                                 \
  (::deepcontext::native::CallerFrame{                                             \
      reinterpret_cast<uintptr_t>(__builtin_return_address(0)),                    \
      reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa()),                          \
      *reinterpret_cast<const uintptr_t*>(__builtin_frame_address(0)),             \
      reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) + 2 * sizeof(uintptr_t)})
#else
#define DEEPCONTEXT_CALLER_FRAME()                                                 \
  (::deepcontext::native::CallerFrame{                                             \
      reinterpret_cast<uintptr_t>(__builtin_return_address(0)),                    \
      reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa()),                          \
      *reinterpret_cast<const uintptr_t*>(__builtin_frame_address(0))})
#endif

// The calling function's return address alone: frames inner of it are cut,
// and the walk starts in the capture (no CFA to start from).
#define DEEPCONTEXT_RETURN_ADDRESS_FRAME()                                         \
  (::deepcontext::native::CallerFrame{                                             \
      reinterpret_cast<uintptr_t>(__builtin_return_address(0)), 0, 0})

// Which anchor a CaptureNear met, and how many outermost frames it gave.
struct AnchorUse {
  int anchor = -1;
  int copied = 0;
};

// One way of unwinding the calling thread. Cheap to copy.
class Unwinder {
 public:
  // `kind` when available, otherwise the best available one (cfi-cache,
  // then libunwind, then glibc backtrace, which always works).
  explicit Unwinder(UnwinderKind kind);

  // The best available unwinder of this process, chosen on first use, or
  // the one named by DEEPCONTEXT_UNWINDER.
  static const Unwinder& Default();

  UnwinderKind kind() const { return kind_; }

  // Name of the unwinder actually used, for profile metadata.
  const char* Name() const { return UnwinderKindName(kind_); }

  // Writes up to `max` return addresses, OUTERMOST FIRST, and returns how
  // many. The innermost one is the return address into the caller of
  // Capture (i.e. a pc inside that caller); `skip` drops that many more
  // innermost frames. When the stack is deeper, the innermost `max` frames
  // are kept. Return addresses point after the call instruction: symbolize
  // `pc - 1`. [any thread, no GIL] Allocation-free after the thread's first
  // call (libunwind and libgcc set up per-thread caches then).
  int Capture(uintptr_t* pcs, int max, int skip) const;

  // Capture(pcs, max, 0) that also writes, for every frame, the stack
  // address it runs at (sps[i] goes with pcs[i]): an anchor for
  // CaptureWithin. Only the cfi-cache unwinder knows these addresses; with
  // another unwinder, or a capture it handed to libgcc, sps are all 0
  // (an anchor nothing matches).
  int CaptureWithStackPointers(uintptr_t* pcs, uintptr_t* sps, int max) const;

  // Capture(pcs, max, 0) made while part of an earlier capture of this
  // thread (anchor_pcs / anchor_sps / anchor_count, written by
  // CaptureWithStackPointers) is still on the stack, e.g. inside the op
  // whose entry took the anchor: unwinds outward only until two
  // consecutive frames are anchor frames (the same return addresses at the
  // same stack addresses, so the same activations) and copies the frames
  // outer of them from the anchor instead of unwinding them again. With no
  // such frames it is a full capture. `copied` (optional) receives how many
  // outermost frames are the anchor's first ones, copied: 0 when none were
  // (or when the stack was too deep to keep the anchor's outermost frame).
  int CaptureWithin(const uintptr_t* anchor_pcs, const uintptr_t* anchor_sps,
                    int anchor_count, uintptr_t* pcs, int max,
                    int* copied = nullptr) const;

  // CaptureWithStackPointers, unwinding only until the stack meets one of
  // up to two earlier captures of this thread (the first one met wins; its
  // outer frames are copied, stack addresses included). An anchor not
  // `live` may have returned since it was taken (the thread's previous
  // op or GPU call): it is met only where, besides two consecutive frames,
  // every frame outer of them still holds the anchor's return address at
  // the anchor's stack address, a load per frame instead of a step. `pcs`
  // and `sps` may be an anchor's own arrays. *use says which anchor was
  // met (its index in `anchors`, -1: none) and how many outermost frames
  // came from it.
  //
  // With `start` (its pc not 0), the innermost frame is start's pc: the
  // frames inner of it are dropped, and the cfi-cache unwinder does not
  // walk them (it begins at start, when start lies on this thread's stack
  // outer of the capture and holds its pc below its CFA). `start` must be
  // a frame of a function still running on this thread.
  int CaptureNear(const StackAnchor* anchors, int anchor_count, uintptr_t* pcs,
                  uintptr_t* sps, int max, AnchorUse* use,
                  const CallerFrame* start = nullptr) const;

 private:
  UnwinderKind kind_;
};

// How the cfi-cache unwinder fared in this process: return addresses whose
// rule it read (and keeps), and captures it handed to libgcc because a frame
// needed a rule it does not model. Both 0 when it never ran.
struct CfiUnwindStats {
  int rules_cached = 0;
  uint64_t libgcc_fallbacks = 0;
};
CfiUnwindStats CfiUnwindStatistics();

// Unwinder::Default().Capture(pcs, max, skip), with the same contract: the
// innermost frame written is the caller of CaptureNativeStack.
int CaptureNativeStack(uintptr_t* pcs, int max, int skip);

}  // namespace deepcontext::native
