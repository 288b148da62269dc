// Allocator events on their way from the threads that allocate to the
// accounting of MemoryMetrics, which runs later and in bulk: on the CPU
// sampler's thread each tick, before the metrics are read, or on an
// allocating thread that finds the queue full.
//
// The allocating thread's share of an event is then one compare-and-swap
// and a 40-byte write, where the accounting takes a lock and reads a live
// block's table slot, its device and its context's entry: lines the
// framework's own work evicts between two allocations, missed on the
// framework's thread, inside its allocator's lock.
//
// A bounded ring (Vyukov's MPMC queue, used with one consumer): a producer
// claims the next ticket by compare-and-swap and publishes its cell by
// writing the ticket's successor into it. Events are consumed in ticket
// order, which is the order of the claims: one allocator's events come
// under its lock, so in its own order, and an event that follows another
// on another thread (a block freed after it was handed over) claims its
// ticket after the other's was claimed and published.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace deepcontext::profiler {

struct MemoryEvent {
  uint64_t address = 0;
  int64_t bytes = 0;  // < 0: a free
  uint64_t context = 0;
  int32_t device = 0;  // -1: host
  uint32_t flags = 0;  // dlmonitor_memory_flag_t bits
};

class MemoryEventQueue {
 public:
  // Events between two ticks of the CPU sampler (1 ms) on a launch-bound
  // model stay well below this; a full ring is drained by its producer.
  static constexpr size_t kCapacity = 4096;

  MemoryEventQueue() : cells_(new Cell[kCapacity]) { Reset(); }
  MemoryEventQueue(const MemoryEventQueue&) = delete;
  MemoryEventQueue& operator=(const MemoryEventQueue&) = delete;

  // Appends `event`; false when the ring is full. [any thread]
  bool TryPush(const MemoryEvent& event) {
    uint64_t ticket = tail_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[ticket & kMask];
      const uint64_t sequence = cell.sequence.load(std::memory_order_acquire);
      const auto lag = static_cast<int64_t>(sequence - ticket);
      if (lag == 0) {
        // On failure `ticket` becomes the current tail: try that one.
        if (tail_.compare_exchange_weak(ticket, ticket + 1,
                                        std::memory_order_relaxed)) {
          cell.event = event;
          cell.sequence.store(ticket + 1, std::memory_order_release);
          return true;
        }
      } else if (lag < 0) {
        return false;  // the cell still holds the event of a lap ago
      } else {
        ticket = tail_.load(std::memory_order_relaxed);  // taken meanwhile
      }
    }
  }

  // Hands the events appended so far to visit(event) in order, stopping at
  // the first one whose producer is still writing it. Returns how many.
  // [one thread at a time]
  template <typename Visit>
  size_t Drain(Visit&& visit) {
    size_t count = 0;
    for (;;) {
      Cell& cell = cells_[head_ & kMask];
      if (cell.sequence.load(std::memory_order_acquire) != head_ + 1) return count;
      const MemoryEvent event = cell.event;
      // Free for the producer of the ticket one lap later.
      cell.sequence.store(head_ + kCapacity, std::memory_order_release);
      ++head_;
      ++count;
      visit(event);
    }
  }

  // Forgets every event. [no other thread using the queue: a forked child,
  // construction]
  void Reset() {
    for (size_t i = 0; i < kCapacity; ++i) {
      cells_[i].sequence.store(i, std::memory_order_relaxed);
    }
    tail_.store(0, std::memory_order_relaxed);
    head_ = 0;
  }

 private:
  static constexpr uint64_t kMask = kCapacity - 1;
  static_assert((kCapacity & kMask) == 0, "a power of two");

  struct Cell {
    std::atomic<uint64_t> sequence{0};
    MemoryEvent event;
  };

  std::unique_ptr<Cell[]> cells_;
  // Producers and the consumer write these: apart, on lines of their own.
  alignas(64) std::atomic<uint64_t> tail_{0};  // the next ticket to claim
  alignas(64) uint64_t head_ = 0;              // the next ticket to consume
};

}  // namespace deepcontext::profiler
