// Ends of ops reported on another thread than the one that started them.
//
// A framework may end an op from a thread of its own: torch ends a
// record_function scope from the callback of the future it waits on (RPC,
// torch.jit.fork, _call_end_callbacks_on_future). A thread's stack of open
// ops is touched by that thread alone, without a lock, so the ending thread
// posts the end here, under the starting thread's id, and the starting
// thread takes it at its next op. Until then the op stays open there.
//
// Checking costs one load of a counter that moves only when an end is
// posted, against the count the thread saw when it last took its ends.
// A post makes every thread look once; ends posted for a thread that never
// looks again (it exited) stay, at most kMaxPending in all.
//
// Op ids are unique among live ops only: an end can be posted for an op
// that is no longer open (it was left open on its thread before profiling
// began, and ended there before the thread's id was known), and its id
// taken by a later op. Each end is numbered, and an op that was entered
// after the end was posted is never the one it ended (After).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

namespace deepcontext {

class EndedElsewhere {
 public:
  // Ends kept for threads that have not taken them; past it the oldest
  // are dropped, which can only leave an op open as it was before posting.
  static constexpr size_t kMaxPending = 4096;

  struct End {
    uint64_t op_id = 0;
    int64_t at = 0;     // when it ended, in the poster's clock
    uint64_t post = 0;  // posts() once it was posted
  };

  // Whether `end` came after an op that was entered when the entering
  // thread had seen `seen_at_entry` posts: only then can it be the op's.
  static bool After(const End& end, uint64_t seen_at_entry) {
    return end.post > seen_at_entry;
  }

  // Takes the op `end` closes out of `ops`, a thread's stack of open ops
  // (innermost last; each has op_id and ends_seen, the posts its thread had
  // seen when it entered), wherever it stands: ops entered above it keep
  // their place. Copies it to *closed when given. False when it is not
  // open there.
  template <class Ops, class Op = typename Ops::value_type>
  static bool Remove(Ops& ops, const End& end, Op* closed = nullptr) {
    for (size_t i = ops.size(); i > 0; --i) {
      const Op& open = ops[i - 1];
      if (open.op_id != end.op_id || !After(end, open.ends_seen)) continue;
      if (closed != nullptr) *closed = open;
      ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(i - 1));
      return true;
    }
    return false;
  }

  // Posts the end of `op_id`, started on the thread the framework calls
  // `thread`. [any thread]
  void Post(uint64_t thread, uint64_t op_id, int64_t at) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (pending_.size() >= kMaxPending) pending_.erase(pending_.begin());
    const uint64_t post = posts_.load(std::memory_order_relaxed) + 1;
    pending_.push_back(Pending{thread, End{op_id, at, post}});
    posts_.store(post, std::memory_order_release);
  }

  // Moves whenever an end is posted: a thread that saw this count when it
  // last took its ends has none waiting. [any thread]
  uint64_t posts() const { return posts_.load(std::memory_order_acquire); }

  // Hands `each` (End) the ends posted for `thread`, oldest first, and
  // forgets them. Stores in *seen the count of posts() they cover.
  // `each` runs outside the lock. [the thread called `thread`]
  template <class Each>
  void Take(uint64_t thread, uint64_t* seen, Each&& each) {
    std::vector<End> mine;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      *seen = posts_.load(std::memory_order_relaxed);
      // Without its id yet, the thread has no op open (it learns its id
      // at its first entry): ends posted under that id are After none.
      if (thread == 0) return;
      size_t kept = 0;
      for (const Pending& pending : pending_) {
        if (pending.thread == thread) {
          mine.push_back(pending.end);
        } else {
          pending_[kept++] = pending;
        }
      }
      pending_.resize(kept);
    }
    for (const End& end : mine) each(end);
  }

  // In the child after fork: the parent's threads, and their ends, are
  // gone, and the lock may have been held by one of them.
  void ResetAfterFork() {
    new (&mutex_) std::mutex();
    pending_.clear();
    posts_.store(posts_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

 private:
  struct Pending {
    uint64_t thread;
    End end;
  };
  std::atomic<uint64_t> posts_{0};
  std::mutex mutex_;  // guards pending_
  std::vector<Pending> pending_;
};

}  // namespace deepcontext
