// The per-thread state of CallPathBuilder (runtime/dlmonitor/call_path_builder.cc
// builds Python and op paths with it, call_path_native.cc native ones): a
// thread's op shadow stack and the caches that let most ops skip hashing
// and the tree's lock. Private to the builder.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/common/flat_hash_map.h"
#include "runtime/common/shadow_stack.h"
#include "runtime/dlmonitor/call_path_builder.h"
#include "runtime/dlmonitor/inside_trails.h"

namespace deepcontext::dlmonitor {

// Where a thread's Python stack stood at a capture: its innermost frame,
// how many frames it had (0: none) and the thread state they came from.
// The state outlives the capture while any of its frames runs, so the ops
// nested in the entry that holds the mark read the innermost frame again
// from it (python::CaptureThread) without looking the state up. `record`
// is the interpreter's innermost frame record then (python::InnermostFrame):
// found again, the stack is as it was, and the frame is not read.
struct PythonMark {
  python::RawFrame top;
  int count = 0;
  const void* thread = nullptr;
  const void* record = nullptr;
};

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
  // The thread's Python position when the entry was pushed. Once another
  // frame is innermost, the op runs Python code of its own (an
  // autograd.Function's forward or backward, code torch.compile
  // generated): ops and GPU calls from there hang below those frames
  // (CallPathBuilder::PythonInside).
  PythonMark python;
  // The entry's context lies below a [compile] phase.
  bool in_compile = false;
  // ThreadState::ends_seen when the entry was pushed (EndedElsewhere::After).
  uint64_t ends_seen = 0;

  // Every field back to its default, one store each (OpStack::Push).
  void Reset() {
    op_id = 0;
    context = kNoContext;
    anchor = kNoContext;
    python_depth = 0;
    kind = DLMONITOR_OP_OPERATOR;
    entry_stack = native::kNoStack;
    python.top.code = nullptr;
    python.top.lasti = 0;
    python.top.ident = 0;
    python.top.entry = false;
    python.count = 0;
    python.thread = nullptr;
    python.record = nullptr;
    in_compile = false;
    ends_seen = 0;
  }
};
static_assert(sizeof(OpEntry) == 104, "a field added to OpEntry needs its store in Reset()");

// A thread's op shadow stack (Push resets an entry with OpEntry::Reset).
using OpStack = ShadowStack<OpEntry>;

namespace call_path {

// Room for one Python capture (CallPathBuilder::CapturePython), left
// uninitialized: the capture writes the frames it returns, and
// value-initializing kMaxPythonDepth + 1 RawFrames was a 4 KiB memset on
// every op entered from Python (perf on bench/event_cost: most of
// NativeContext's own time). RawFrame is an aggregate, so the bytes hold
// its objects implicitly. Kept in the thread's state, not on the stack: a
// frame over a page is probed page by page on every call where the compiler
// guards against stack clashes (lent through BorrowedScratch).
class PythonCaptureBuffer {
 public:
  python::RawFrame* frames() {
    return std::launder(reinterpret_cast<python::RawFrame*>(storage_));
  }

 private:
  alignas(python::RawFrame) unsigned char
      storage_[sizeof(python::RawFrame) * (CallPathBuilder::kMaxPythonDepth + 1)];
};

// The first-sight work of CallPathBuilder::NativeContext: a path's Python
// frames resolved, the native frames classified and both spliced. Some
// 10 KiB, on the heap of the threads that build native paths (BorrowedScratch).
struct NativePathScratch {
  static constexpr int kSpliceCapacity =
      native::kMaxNativeDepth + CallPathBuilder::kMaxPythonDepth;
  ResolvedPythonFrame resolved[CallPathBuilder::kMaxPythonDepth];
  bool entry[CallPathBuilder::kMaxPythonDepth];
  native::NativeFrameClass classes[native::kMaxNativeDepth];
  native::SplicedFrame spliced[kSpliceCapacity];
};

// Lends a per-thread object (made on first use) to one user at a time: the
// slot is emptied while it is lent, so a nested user (a capture made while
// another one of the same thread still reads its frames) gets an object of
// its own, from the heap, and never overwrites the outer one's. The first
// object given back is kept for the next user.
template <typename T>
class BorrowedScratch {
 public:
  explicit BorrowedScratch(std::unique_ptr<T>& slot)
      : slot_(slot), object_(std::move(slot)) {
    if (object_ == nullptr) [[unlikely]] object_ = Make();
  }
  ~BorrowedScratch() {
    if (slot_ == nullptr) slot_ = std::move(object_);
  }
  BorrowedScratch(const BorrowedScratch&) = delete;
  BorrowedScratch& operator=(const BorrowedScratch&) = delete;

  T& operator*() const { return *object_; }
  T* operator->() const { return object_.get(); }

 private:
  // Out of the op path (runtime/common/hot_path.h).
  [[gnu::noinline, gnu::cold]] static std::unique_ptr<T> Make() {
    return std::unique_ptr<T>(new T);  // default-initialized
  }

  std::unique_ptr<T>& slot_;
  std::unique_ptr<T> object_;
};

// A GPU API call's native stack inside one op: the first `copied` frames of
// the op's entry stack (`entry`; none when copied is 0), then `stack`, the
// frames unwound. Interning only the unwound part spares hashing and
// comparing the frames copied from the entry stack at every call.
struct InsidePathKey {
  ContextId op = kNoContext;
  native::StackId entry = native::kNoStack;
  int copied = 0;
  native::StackId stack = native::kNoStack;
  bool operator==(const InsidePathKey&) const = default;
};

struct InsidePathKeyHash {
  size_t operator()(const InsidePathKey& key) const {
    uint64_t h = key.op * 0x9E3779B97F4A7C15ULL ^ key.stack;
    h ^= (static_cast<uint64_t>(key.entry) << 24) ^ static_cast<uint64_t>(key.copied);
    h *= 0xBF58476D1CE4E5B9ULL;
    return static_cast<size_t>(h ^ (h >> 31));
  }
};

// Modules whose frames end a GPU API call's path: the driver and the tracing
// library (and everything they call, our callbacks included).
// By module path (FrameResolver's, not dladdr's: dladdr scans every symbol
// of a library per call, a millisecond in libtorch).
inline bool IsGpuDriverModule(std::string_view file) {
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

// What an op entry's capture saw, for building a path first seen
// (CallPathBuilder::NewNativePath): `native_count` return addresses,
// outermost first, and Python frames [first_python, count) of `frames`.
struct NativeCapture {
  const uintptr_t* pcs = nullptr;
  int native_count = 0;
  const python::RawFrame* frames = nullptr;
  int count = 0;
  int first_python = 0;
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

}  // namespace call_path

// An op name seen before at the same address: its id without hashing the
// text. The name is checked against a copy, so a transient name (a user
// scope's f-string) whose memory is reused for another name is never
// mistaken for it: short names (most) against the copy kept in the entry,
// on the line the check reads anyway, longer ones against the interned
// text.
constexpr size_t kInlineOpName = 40;
struct alignas(64) OpNameCacheEntry {
  const char* pointer = nullptr;
  const char* text = nullptr;  // the interned copy
  uint32_t length = 0;
  StringId id = 0;
  char inline_text[kInlineOpName] = {};  // a copy when length < kInlineOpName
};
constexpr size_t kOpNameCacheSize = 256;  // direct-mapped by address
// Names built per call have no steady address: backward functions' names
// live in their RecordFunction, at the same stack address for every node
// the engine runs, or in a heap buffer whose address comes back with
// another name. On a miss by address they are found by their text here
// (direct-mapped by length and first and last bytes) before the thread's
// map, whose lookup hashes the whole name and chases a node per bucket.
constexpr size_t kOpNameTextCacheSize = 128;

struct ThreadState {
  uint64_t generation = 0;
  ContextId root = kNoContext;
  OpStack ops;
  // The framework's id of this thread (dlmonitor_op_data_t::thread_id of
  // its latest op entry; 0 before one), under which other threads post the
  // ends of its ops, and how many posts it has looked at (EndedElsewhere).
  uint64_t framework_thread = 0;
  uint64_t ends_seen = 0;
  int64_t last_remembered_sequence = -1;
  ContextId last_remembered_anchor = kNoContext;
  std::unordered_map<std::string, StringId, call_path::StringHash, std::equal_to<>>
      op_names;
  OpNameCacheEntry op_name_cache[kOpNameCacheSize];
  OpNameCacheEntry op_name_text_cache[kOpNameTextCacheSize];

  // The previous Python capture and what it resolved to, position by
  // position; ctx[i] == kNoContext means "not looked up yet".
  ContextId cached_base = kNoContext;
  int cached_start = -1;
  int cached_count = 0;
  // Positions [cached_start, ctx_known) have their ctx looked up; the
  // first position of the capture whose frame is in a compilation phase
  // (cached_count when none): only frames that changed are looked at again.
  int ctx_known = 0;
  int first_compile = 0;
  python::RawFrame raw[CallPathBuilder::kMaxPythonDepth];
  ResolvedPythonFrame resolved[CallPathBuilder::kMaxPythonDepth];
  ContextId ctx[CallPathBuilder::kMaxPythonDepth];
  // Call sites this thread resolved last (see PythonFrameCache).
  PythonFrameCache::ThreadCache frame_cache;

  // Native call-path cache (see NativeContext).
  FlatHashMap<call_path::NativePathKey, std::vector<call_path::NativePathVariant>,
              call_path::NativePathKeyHash>
      native_paths;
  size_t native_variants = 0;
  // What the latest Python capture saw (see OpEntry::python) and
  // whether the context it built lies below a [compile] phase.
  PythonMark last_python;
  bool last_in_compile = false;
  // Stack id of the latest NativeContext capture.
  native::StackId last_native_stack = native::kNoStack;
  // That capture's frames with their stack addresses: while the op whose
  // entry took it runs, GPU API calls and allocations inside it unwind only
  // down to where their stack meets it (Unwinder::CaptureNear); the next
  // op's entry unwinds only down to where its stack still holds them.
  uintptr_t anchor_pcs[native::kMaxNativeDepth];
  uintptr_t anchor_sps[native::kMaxNativeDepth];
  int anchor_count = 0;
  native::StackId anchor_stack = native::kNoStack;  // their stack's id
  // Recent op entries' stacks with the trails that prove them against the
  // entry capture before them (entry_trails.h), made at the first kept.
  std::unique_ptr<EntryTrails> entry_trails;
  // GPU API call paths inside ops (see InsideOpContext).
  FlatHashMap<call_path::InsidePathKey, ContextId, call_path::InsidePathKeyHash> inside_paths;
  // The latest such call's frames, with stack addresses: the next call
  // unwinds only down to where its stack still holds them. When all its
  // frames are the same, inside the same op, its answer is the same.
  uintptr_t inside_pcs[native::kMaxNativeDepth];
  uintptr_t inside_sps[native::kMaxNativeDepth];
  int inside_count = 0;
  // Its key's split (InsidePathKey: copied frames, id of the others).
  int inside_copied = 0;
  // How many of its outermost frames are the entry anchor's, as the anchor
  // holds them now (NativeContext keeps it for the frames a new anchor
  // copied from the old): while that anchor is live, the next call's walk
  // checks none outer of them.
  int inside_live_prefix = 0;
  native::StackId inside_stack = native::kNoStack;
  ContextId inside_op = kNoContext;
  native::StackId inside_entry = native::kNoStack;
  ContextId inside_answer = kNoContext;
  // Answers of recent such calls with the trails that prove them
  // (inside_trails.h), made at the first call kept there.
  std::unique_ptr<InsideTrails> inside_trails;
  // Recent (parent, operator, phase or Python frame) -> child answers of
  // the tree (CachedChild).
  ChildCache children;

  // Room for the Python capture of PythonContext, MarkPython and
  // NativeContext, and NativeContext's first-sight scratch, each made on
  // first use and lent through BorrowedScratch.
  std::unique_ptr<call_path::PythonCaptureBuffer> python_capture;
  std::unique_ptr<call_path::NativePathScratch> native_scratch;
};


}  // namespace deepcontext::dlmonitor
