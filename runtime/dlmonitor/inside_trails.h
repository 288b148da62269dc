// A thread's recent GPU API calls inside ops (CallPathBuilder::
// InsideOpContext), each answered once by unwinding and kept with the
// stack trail from its caller frame to the op's entry capture
// (runtime/native/stack_trail.h). A later call from the same caller frame,
// inside an op of the same context and entry stack, whose trail still
// holds gets the same answer without unwinding: its native stack is the
// same, frame for frame, and so is its path.
//
// Sets of kWays entries, least recently used replaced. One key may take
// several ways: an op that reaches the same caller frame through two
// different paths (two launch sites at one stack depth) keeps both trails.
// A trail is recorded at a key's second unwound call: its first keeps an
// entry without one, so that keys that do not come back before they are
// replaced (a program with more call sites than entries) cost no
// recording. A key whose trail could not be recorded keeps an entry
// without one too, so that its next calls neither find a trail nor record
// one again, but for every kRecordMarkedEvery-th: what kept it from being
// recorded may have been that call's alone.
#ifndef DEEPCONTEXT_RUNTIME_DLMONITOR_INSIDE_TRAILS_H_
#define DEEPCONTEXT_RUNTIME_DLMONITOR_INSIDE_TRAILS_H_

#include <cstdint>

#include "runtime/dlmonitor/context_tree.h"
#include "runtime/native/stack_cache.h"
#include "runtime/native/stack_trail.h"

namespace deepcontext::dlmonitor {

class InsideTrails {
 public:
  struct Key {
    ContextId op = kNoContext;
    native::StackId entry = native::kNoStack;
    uintptr_t pc = 0;   // the caller frame's return address
    uintptr_t cfa = 0;  // and CFA
    bool operator==(const Key&) const = default;
  };

  static constexpr int kSetBits = 7;
  static constexpr int kWays = 4;
  static constexpr uint32_t kRecordMarkedEvery = 64;

  // The answer kept for `key` whose trail holds from `start` to `anchor`
  // (the op's live entry capture), or kNoContext.
  ContextId Answer(const Key& key, const native::CallerFrame& start,
                   const native::StackAnchor& anchor);

  // Keeps `answer` for `key` with the trail from `start` to `anchor` as the
  // stack is now, unless this is the key's first sight (then it keeps an
  // entry without a trail) or an entry of `key` without a trail says none
  // can be recorded (but for every kRecordMarkedEvery-th call). `pcs` and `sps`
  // (`count` frames, outermost first) are the stack the answer was found
  // for, as the call's unwind gave it: a trail that describes another stack
  // is not kept. Returns whether a trail was kept. Steps by rule: cold.
  [[gnu::noinline, gnu::cold]] bool Keep(const Key& key, ContextId answer,
                                         const native::CallerFrame& start,
                                         const native::StackAnchor& anchor,
                                         const uintptr_t* pcs, const uintptr_t* sps, int count);

 private:
  struct Entry {
    Key key;
    ContextId answer = kNoContext;
    uint32_t used = 0;     // tick of the last use; 0: empty
    uint32_t skipped = 0;  // calls not recorded since it was marked
  };
  static constexpr int kEntries = kWays << kSetBits;
  static int SetOf(const Key& key);

  Entry entries_[kEntries];
  native::StackTrail trails_[kEntries];
  uint32_t tick_ = 0;
};

}  // namespace deepcontext::dlmonitor

#endif  // DEEPCONTEXT_RUNTIME_DLMONITOR_INSIDE_TRAILS_H_
