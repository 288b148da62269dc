// Correlation id -> launch context, shared between the threads that launch
// GPU work (insert at API entry) and the activity-processing thread (look up
// when a record arrives). Sharded by blocks of consecutive ids (see
// CorrelationShards), so that the two sides rarely touch the same memory;
// each shard keeps its launches in place in a ring indexed by id
// (correlation_slots.h), so an insert neither hashes nor allocates.
// Records that arrive before their launch is known are parked beside the
// entry and handed back once the launch shows up.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <variant>
#include <vector>

#include "runtime/common/spin_lock.h"
#include "runtime/gpu/correlation_slots.h"
#include "runtime/gpu/gpu_records.h"

namespace deepcontext::gpu {

// An activity record waiting for its launch.
using PendingRecord =
    std::variant<KernelRecord, MemcpyRecord, MemsetRecord, SyncRecord>;

class CorrelationTable {
 public:
  // Keeps at most about `max_launches` launches; beyond that the oldest
  // (smallest correlation ids, which the vendor hands out in increasing
  // order) of a shard are evicted, so launches whose records never come
  // (kinds not traced, failed calls) cannot grow the table without bound.
  // At most `max_parked` records wait for launches at any time.
  CorrelationTable(size_t max_launches, size_t max_parked);

  // Records a launch made during flush interval `epoch` (see
  // CountUnanswered). Returns true when records were already parked for it;
  // its id is then queued for TakeReady(). [any thread]
  bool AddLaunch(const LaunchRecord& launch, uint32_t epoch = 0);

  // Forgets a launch that will produce no records (failed or captured
  // into a graph), unless records are already parked for it. [any thread]
  void Forget(uint64_t correlation_id);

  // If the launch of `correlation_id` is known: counts one record against
  // it (erasing it when all expected records arrived), copies it to *info
  // and returns true. [any thread]
  bool Claim(uint64_t correlation_id, LaunchInfo* info);

  enum class ParkResult { kParked, kLaunched, kFull };
  // Parks `record` until its launch arrives. If the launch arrived in the
  // meantime, claims it like Claim() and returns kLaunched without taking
  // the record; kFull when max_parked records are already waiting.
  ParkResult Park(uint64_t correlation_id, PendingRecord&& record,
                  LaunchInfo* info);

  // Calls visit(info, records) for every launch that arrived after records
  // had been parked for it, handing over (and counting) those records.
  void TakeReady(
      const std::function<void(const LaunchInfo&, std::vector<PendingRecord>&)>&
          visit);

  // Hands over every parked record: visit(info, records) with info == nullptr
  // when the launch never arrived. Then forgets those entries and launches
  // that expect an unknown number of records (graph launches); launches
  // still expecting a known number of records are kept.
  void Flush(
      const std::function<void(const LaunchInfo*, std::vector<PendingRecord>&)>&
          visit);

  // Counts launches that expect records, have none, were made in an epoch
  // before `before_epoch`, are not synchronizations (record_at_return) and
  // are newer than `newest_record`, the highest correlation id of any
  // record received; each launch is counted once. Remaining launches are
  // kept: their records may still come.
  uint64_t CountUnanswered(uint32_t before_epoch, uint64_t newest_record);

  size_t parked() const { return parked_.load(std::memory_order_relaxed); }
  uint64_t evicted() const { return evicted_.load(std::memory_order_relaxed); }
  // Number of entries (launches and parked-only ids); for tests.
  size_t size() const;

 private:
  static constexpr size_t kShards = CorrelationShards::kShards;
  // Slots of the ids after a launch prefetched at its insert (AddLaunch).
  static constexpr int kPrefetchedSlots = 2;
  // Launching threads insert and the processing thread claims, both for a
  // few tens of nanoseconds: a spin lock, since a futex wake-up would cost
  // more than the work.
  struct alignas(64) Shard {
    mutable SpinLock mutex;  // guards everything below
    CorrelationSlots slots;
    // Records of the kWaiting and kReady slots, kept out of the slots:
    // records nearly always come long after their launch.
    std::unordered_map<uint64_t, std::vector<PendingRecord>> parked;
    std::vector<uint64_t> eviction_ids;  // reused by EvictOldest
  };

  // Consecutive ids share a shard, 64 at a time: a launching thread keeps
  // inserting into one shard, whose lock and slots stay in its cache,
  // while the processing thread, which claims records in id order long
  // after their launches, works in another. Spreading consecutive ids over
  // all shards made every insert and every claim a cache miss on a line
  // the other thread had just written (bench/attribution_cost.cc: about 7x
  // slower per launch).
  Shard& ShardOf(uint64_t correlation_id) {
    return shards_[CorrelationShards::ShardOf(correlation_id)];
  }
  // Counts records against a launched slot; erases it when done.
  void CountRecord(Shard& shard, CorrelationSlot& slot, uint32_t records);
  void EvictOldest(Shard& shard);

  const size_t max_per_shard_;
  const size_t max_parked_;
  std::array<Shard, kShards> shards_;
  std::atomic<size_t> parked_{0};
  std::atomic<uint64_t> evicted_{0};
  std::mutex ready_mutex_;  // guards ready_
  std::vector<uint64_t> ready_;
  std::atomic<bool> has_ready_{false};
};

}  // namespace deepcontext::gpu
