// Finished ops' samples, kept per thread and added to the MetricStore in
// batches, off the op's thread where a sampling thread runs.
//
// Adding an op's calls and times to the store at its exit takes the
// context's spin lock (an atomic exchange, which waits for the thread's
// pending stores) and touches the context's slot and accumulators, lines
// that the ops run since have evicted: on the GPU machine that was the
// largest part of an op's exit. Writing the sample into a per-thread ring
// is a few plain stores to a line the thread wrote last; whoever drains
// the ring (the CPU sampler's thread each tick, a profile write, or the
// thread itself when its ring is full) does the store's work.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/common/spin_lock.h"
#include "runtime/profiler/metric_store.h"

namespace deepcontext::profiler {

// One finished op: its context, exclusive wall time in wall-clock ticks and
// exclusive CPU time in ns (kNoCpu when not measured).
struct OpSample {
  static constexpr int64_t kNoCpu = -1;
  ContextId context = 0;
  int64_t wall_ticks = 0;
  int64_t cpu_ns = kNoCpu;
  bool call = true;  // false for an engine wrapper (not a call of its phase)
};

// One thread's samples: a single-producer ring. The owning thread pushes
// without locks or atomic read-modify-writes; drains take the ring's lock,
// so there is one consumer at a time, on any thread.
class OpSampleRing {
 public:
  static constexpr uint64_t kCapacity = 1024;  // 32 KiB

  // Owner thread only. False when the ring is full. The fields are
  // stored straight into the slot: an OpSample built field by field on the
  // stack and copied in whole is read back with wider loads before its
  // stores have drained, a store-forwarding stall that was a third of an
  // op's exit (perf annotate of OpMetrics::Exit).
  bool TryPush(ContextId context, int64_t wall_ticks, int64_t cpu_ns, bool call) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - cached_tail_ >= kCapacity) [[unlikely]] {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (head - cached_tail_ >= kCapacity) return false;
    }
    OpSample& slot = samples_[head & (kCapacity - 1)];
    slot.context = context;
    slot.wall_ticks = wall_ticks;
    slot.cpu_ns = cpu_ns;
    slot.call = call;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }
  bool TryPush(const OpSample& sample) {
    return TryPush(sample.context, sample.wall_ticks, sample.cpu_ns, sample.call);
  }

  // Any thread: calls apply(sample) for every sample pushed so far, oldest
  // first, and frees their room. Returns how many there were.
  template <typename Apply>
  uint64_t Drain(Apply&& apply) {
    std::lock_guard<SpinLock> guard(drain_lock_);
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    for (uint64_t i = tail; i != head; ++i) apply(samples_[i & (kCapacity - 1)]);
    tail_.store(head, std::memory_order_release);
    return head - tail;
  }

  // The owner is gone (thread exit, or its stack was reset): the log drops
  // the ring once it is drained.
  void Orphan() { orphaned_.store(true, std::memory_order_release); }
  bool orphaned() const { return orphaned_.load(std::memory_order_acquire); }

 private:
  // The owner's line (head and its copy of tail) apart from the drainer's.
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t cached_tail_ = 0;
  alignas(64) std::atomic<uint64_t> tail_{0};
  SpinLock drain_lock_;
  std::atomic<bool> orphaned_{false};
  alignas(64) OpSample samples_[kCapacity];
};

// Every thread's ring, for draining them all.
class OpSampleLog {
 public:
  OpSampleLog() : rings_(std::make_unique<Rings>()) {}

  // A new ring for the calling thread. [any thread]
  std::shared_ptr<OpSampleRing> Register();

  // Drains every ring into apply(sample), then forgets the orphaned ones.
  // [any thread]
  template <typename Apply>
  void DrainAll(Apply&& apply) {
    Rings& rings = *rings_;
    std::lock_guard<std::mutex> guard(rings.mutex);
    std::erase_if(rings.list, [&](const std::shared_ptr<OpSampleRing>& ring) {
      // Orphaned is read first: a ring orphaned after its drain keeps its
      // place until the next one.
      const bool orphaned = ring->orphaned();
      ring->Drain(apply);
      return orphaned;
    });
  }

  size_t rings() const;

  // In a forked child: the other threads and their rings do not exist, and
  // the mutex may have been held by one of them. Forgets every ring without
  // locking.
  void ResetAfterFork();

 private:
  struct Rings {
    mutable std::mutex mutex;
    std::vector<std::shared_ptr<OpSampleRing>> list;
  };
  std::unique_ptr<Rings> rings_;
};

}  // namespace deepcontext::profiler
