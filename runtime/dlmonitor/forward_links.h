// Remembers where forward ops ran so that backward functions, which run on
// autograd threads without Python frames, can be placed under the calling
// context of the forward op that created them.
//
// Key: (logical forward thread id, autograd sequence number), exactly what
// the framework reports at forward time (thread_id, sequence_number) and at
// backward time (forward_thread_id, sequence_number). Value: the context the
// forward op hung from (its Python line or user scope).
//
// Sequence numbers grow without bound in long training runs, so entries are
// evicted oldest-first once a shard holds kMaxPerShard of them: a backward
// pass runs shortly after its forward pass, never a million ops later.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "runtime/dlmonitor/context_tree.h"

namespace deepcontext::dlmonitor {

class ForwardLinks {
 public:
  static constexpr size_t kShards = 16;
  static constexpr size_t kMaxPerShard = 1 << 15;

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
  struct Shard {
    mutable std::mutex mutex;
    std::unordered_map<uint64_t, ContextId> anchors;
    std::deque<uint64_t> order;  // insertion order for eviction
  };
  static uint64_t Key(uint64_t thread_id, int64_t sequence_number) {
    return (thread_id << 48) ^ static_cast<uint64_t>(sequence_number);
  }
  Shard& ShardFor(uint64_t key) const {
    return shards_[(key ^ (key >> 17)) % kShards];
  }
  mutable Shard shards_[kShards];
};

}  // namespace deepcontext::dlmonitor
