// A thread's recent op entries from Python (CallPathBuilder::NativeContext),
// each unwound once and kept with the stack trail from the reporting
// caller frame to the previous entry capture it met
// (runtime/native/stack_trail.h). A later entry from the same caller frame
// whose previous entry capture is the same stack, and whose trail still
// holds against it (the words the walk read, and the previous capture's
// frames outer of the meeting point still in place), has the same native
// stack: its frames are written out and its stack id is known, with no
// walk and no hashing.
//
// The previous entry capture is not live (its op has returned), which is
// why the frames outer of the meeting point are checked slot by slot, as a
// walk that meets such an anchor checks them (cfi_walk.cc).
//
// Sets of kWays entries, least recently used replaced. As in
// inside_trails.h, a trail is recorded at a key's second unwound entry, and
// a key whose trail could not be kept keeps an entry without one, recorded
// again every kRecordMarkedEvery-th entry.
#ifndef DEEPCONTEXT_RUNTIME_DLMONITOR_ENTRY_TRAILS_H_
#define DEEPCONTEXT_RUNTIME_DLMONITOR_ENTRY_TRAILS_H_

#include <cstdint>

#include "runtime/native/native_stack.h"
#include "runtime/native/stack_cache.h"
#include "runtime/native/stack_trail.h"

namespace deepcontext::dlmonitor {

class EntryTrails {
 public:
  struct Key {
    native::StackId previous = native::kNoStack;  // the previous entry capture's
    uintptr_t pc = 0;   // the caller frame's return address
    uintptr_t cfa = 0;  // and CFA
    bool operator==(const Key&) const = default;
  };

  static constexpr int kSetBits = 6;
  static constexpr int kWays = 4;
  static constexpr uint32_t kRecordMarkedEvery = 64;

  // Where a trail of `key` holds from `start` to `previous` (the thread's
  // previous entry capture, its stack `key.previous`, given as not live):
  // writes this capture's frames beyond the `*copied` outermost ones, which
  // are `previous`'s own, into `pcs`/`sps` (outermost first; they may be
  // `previous`'s arrays), sets `*count`, and returns the capture's stack
  // id. native::kNoStack where none holds (nothing written).
  native::StackId Replay(const Key& key, const native::CallerFrame& start,
                         const native::StackAnchor& previous, uintptr_t* pcs, uintptr_t* sps,
                         int* count, int* copied);

  // Keeps `stack` for `key` with the trail from `start` to the capture's
  // first `copied` frames (the previous entry capture's, which the capture
  // met and kept), unless this is the key's first sight or an entry of
  // `key` without a trail says none can be recorded (but for every
  // kRecordMarkedEvery-th entry). `pcs`/`sps`
  // are the capture's `count` frames, outermost first: a trail that
  // describes another stack is not kept. Returns whether one was kept.
  // Steps by rule: cold.
  [[gnu::noinline, gnu::cold]] bool Keep(const Key& key, native::StackId stack,
                                         const native::CallerFrame& start, const uintptr_t* pcs,
                                         const uintptr_t* sps, int count, int copied);

 private:
  struct Entry {
    Key key;
    native::StackId stack = native::kNoStack;
    uint32_t used = 0;     // tick of the last use; 0: empty
    uint32_t skipped = 0;  // entries not recorded since it was marked
  };
  static constexpr int kEntries = kWays << kSetBits;
  static int SetOf(const Key& key);

  Entry entries_[kEntries];
  native::StackTrail trails_[kEntries];
  native::StackTrailFrames frames_[kEntries];  // innermost first
  uint32_t tick_ = 0;
};

}  // namespace deepcontext::dlmonitor

#endif  // DEEPCONTEXT_RUNTIME_DLMONITOR_ENTRY_TRAILS_H_
