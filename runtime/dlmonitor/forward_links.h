// Remembers where forward ops ran so that backward functions, which run on
// autograd threads without Python frames, can be placed under the calling
// context of the forward op that created them.
//
// Key: (logical forward thread id, autograd sequence number), exactly what
// the framework reports at forward time (thread_id, sequence_number) and at
// backward time (forward_thread_id, sequence_number). Value: the context the
// forward op hung from (its Python line or user scope).
//
// Every forward op that records autograd history remembers its number, so
// this sits on the per-op path: a fixed table, allocated at the first
// Remember, with no allocation or futex per op. The number picks the set
// (numbers are dense per thread, so a thread's consecutive ops use
// consecutive sets; the thread id shifts where each thread starts, so
// threads at the same numbers, like DataParallel replicas, do not pile into
// the same sets); a set keeps the kWays links it received last. A thread
// alone keeps its links for kSets * kWays of its ops, T threads about a
// T-th of that each: a backward pass runs shortly after its forward pass,
// never that many ops later.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "runtime/common/spin_lock.h"
#include "runtime/dlmonitor/context_tree.h"

namespace deepcontext::dlmonitor {

class ForwardLinks {
 public:
  static constexpr size_t kSets = size_t{1} << 16;
  static constexpr size_t kWays = 3;

  ForwardLinks();
  ~ForwardLinks();

  // Records the anchor for (thread_id, sequence_number), replacing an older
  // one. The framework reports the *next* sequence number to every op that
  // records autograd history, also to ops that create no backward node
  // (e.g. `loss.item()`); the number is consumed only by the op that does
  // create one, so the latest op with a given number is its owner (or an
  // op nested inside the owner, which has the same anchor). [any thread]
  void Remember(uint64_t thread_id, int64_t sequence_number, ContextId anchor);

  // The anchor recorded for the key, or kNoContext. [any thread]
  ContextId Find(uint64_t thread_id, int64_t sequence_number) const;

  // Drops everything (after fork, the parent's ops are not ours).
  void Clear();

 private:
  struct Entry {
    uint64_t key = 0;
    ContextId anchor = kNoContext;  // kNoContext: the way is free
  };
  // One cache line: a lock and kWays entries, replaced oldest first.
  struct alignas(64) Set {
    SpinLock lock;
    uint8_t next = 0;  // the way the next new link replaces
    Entry ways[kWays];
  };
  static constexpr uint64_t kSequenceBits = 48;
  static uint64_t Key(uint64_t thread_id, int64_t sequence_number) {
    return (thread_id << kSequenceBits) ^ static_cast<uint64_t>(sequence_number);
  }
  Set& SetFor(uint64_t thread_id, int64_t sequence_number) const {
    // Golden-ratio steps spread the starts of any number of threads evenly.
    constexpr uint64_t kStride = (kSets * 618034 / 1000000) | 1;
    const uint64_t start = thread_id * kStride;
    return sets_.load(std::memory_order_acquire)
        [(static_cast<uint64_t>(sequence_number) + start) % kSets];
  }

  // Allocates the table, once. Out of the op path: std::call_once sets two
  // thread-locals before it even looks at its flag, on every call.
  [[gnu::noinline, gnu::cold]] void Allocate();

  // Allocated at the first Remember (kSets cache lines, 4 MiB): processes
  // without autograd ops never pay for the table.
  std::once_flag allocate_once_;
  std::unique_ptr<Set[]> storage_;
  std::atomic<Set*> sets_{nullptr};
};

}  // namespace deepcontext::dlmonitor
