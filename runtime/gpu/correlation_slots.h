// The entries of one shard of the correlation table (correlation_table.h),
// keyed by correlation id, without locking: a ring indexed by id plus an
// overflow map for the rare id whose slot is taken.
//
// The vendor hands out correlation ids in increasing order, and a shard
// gets consecutive blocks of them, so the launches waiting for records at
// any time fill a window of consecutive ring slots: an insert writes the
// slot of its id in place (no hashing, no allocation), a claim finds it at
// the same index. A slot is taken by another id only when that id is a
// whole lap of the ring older: a straggler (a launch whose records never
// came, or an open-ended graph launch), or one of a window wider than the
// ring. The older id then moves to the overflow map, and the ring grows
// when it is half full or when ids keep being found in the overflow: those
// were not stragglers, so the window is wider than the ring (ids of other
// API calls between the launches make it sparse). Stragglers alone never
// make it grow; they stay in the overflow until their records come, a
// flush, or eviction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "runtime/common/prefetch.h"
#include "runtime/gpu/gpu_records.h"

namespace deepcontext::gpu {

// What attribution needs to know about a launch. The API name is copied
// into a fixed buffer so that inserting never allocates for the name.
struct LaunchInfo {
  static constexpr size_t kMaxApiName = 47;
  ContextId context = 0;
  uint64_t thread = 0;
  uint32_t expected_records = 1;
  uint8_t api_name_length = 0;
  char api_name_chars[kMaxApiName] = {};

  void SetApiName(std::string_view name) {
    api_name_length = static_cast<uint8_t>(name.size() < kMaxApiName ? name.size() : kMaxApiName);
    std::memcpy(api_name_chars, name.data(), api_name_length);
  }
  std::string_view api_name() const {
    return std::string_view(api_name_chars, api_name_length);
  }
};

// How the table spreads ids over its shards: blocks of 2^kBlockLog2
// consecutive ids, in turn over 2^kShardsLog2 shards.
struct CorrelationShards {
  static constexpr int kBlockLog2 = 6;
  static constexpr int kShardsLog2 = 6;
  static constexpr size_t kShards = size_t{1} << kShardsLog2;

  static size_t ShardOf(uint64_t correlation_id) {
    return (correlation_id >> kBlockLog2) & (kShards - 1);
  }
  // The id with the shard's bits taken out: the ids of one shard, in
  // order, get consecutive local indices.
  static uint64_t LocalIndex(uint64_t correlation_id) {
    constexpr uint64_t kBlockMask = (uint64_t{1} << kBlockLog2) - 1;
    return ((correlation_id >> (kBlockLog2 + kShardsLog2)) << kBlockLog2) |
           (correlation_id & kBlockMask);
  }
};

// Where an entry is in its life; parked records live beside the slots
// (CorrelationTable::Shard::parked) while the state says they exist.
enum class SlotState : uint8_t {
  kFree,      // no entry
  kWaiting,   // records parked, launch not known yet
  kReady,     // launched, parked records not handed over yet
  kLaunched,  // launched, no parked records
};

struct CorrelationSlot {
  uint64_t correlation_id = 0;
  LaunchInfo launch;
  uint32_t seen = 0;   // records counted against the launch
  uint32_t epoch = 0;  // flush interval of the launch
  SlotState state = SlotState::kFree;
  bool record_at_return = false;
  bool counted_unanswered = false;

  bool launched() const {
    return state == SlotState::kReady || state == SlotState::kLaunched;
  }
  bool has_parked() const {
    return state == SlotState::kWaiting || state == SlotState::kReady;
  }
};

class CorrelationSlots {
 public:
  CorrelationSlots() = default;
  CorrelationSlots(const CorrelationSlots&) = delete;
  CorrelationSlots& operator=(const CorrelationSlots&) = delete;

  // The ring grows up to the power of two at or above `entries` slots (the
  // table's bound per shard); beyond it taken slots spill to the overflow.
  void LimitRing(size_t entries);

  CorrelationSlot* Find(uint64_t correlation_id) {
    if (ring_ != nullptr) {
      CorrelationSlot& home = ring_[Index(correlation_id)];
      if (home.state != SlotState::kFree && home.correlation_id == correlation_id) {
        return &home;
      }
    }
    if (NotInOverflow(correlation_id)) return nullptr;
    return FindInOverflow(correlation_id);
  }

  // The entry of `correlation_id`; a new one is kFree with no records
  // seen, for the caller to fill. Invalidates other slot pointers.
  CorrelationSlot& FindOrInsert(uint64_t correlation_id) {
    if (ring_ != nullptr) {
      CorrelationSlot& home = ring_[Index(correlation_id)];
      if (home.state == SlotState::kFree) {
        if (NotInOverflow(correlation_id)) {
          ++ring_used_;
          Reset(home, correlation_id);
          return home;
        }
      } else if (home.correlation_id == correlation_id) {
        return home;
      }
    }
    return FindOrInsertSlow(correlation_id);
  }

  // Asks for the lines of the slots the next `count` ids after
  // `correlation_id` would take, for writing. Such a slot was last written
  // by the thread that claimed its previous id, so it sits in that core's
  // cache; the launch that takes it would wait for it at its insert. The
  // next launch comes microseconds later, long enough for the lines to
  // arrive.
  void PrefetchAfter(uint64_t correlation_id, int count) const {
    if (ring_ == nullptr) return;
    for (int i = 1; i <= count; ++i) {
      const char* slot = reinterpret_cast<const char*>(&ring_[Index(correlation_id + i)]);
      PrefetchForWrite(slot);
      PrefetchForWrite(slot + sizeof(CorrelationSlot) - 1);
    }
  }

  // `slot` must come from Find or FindOrInsert, with no insert since.
  void Erase(CorrelationSlot& slot);

  // visit(slot) for every entry, in no particular order.
  template <typename Visit>
  void ForEach(Visit&& visit) {
    for (size_t i = 0; i < capacity_; ++i) {
      if (ring_[i].state != SlotState::kFree) visit(ring_[i]);
    }
    for (auto& [id, slot] : overflow_) visit(slot);
  }

  // Erases every entry for which erase(slot) returns true.
  template <typename Predicate>
  void EraseIf(Predicate&& erase) {
    for (size_t i = 0; i < capacity_; ++i) {
      if (ring_[i].state != SlotState::kFree && erase(ring_[i])) {
        ring_[i].state = SlotState::kFree;
        --ring_used_;
      }
    }
    for (auto it = overflow_.begin(); it != overflow_.end();) {
      it = erase(it->second) ? overflow_.erase(it) : std::next(it);
    }
    if (overflow_.empty()) overflow_newest_ = 0;
  }

  size_t size() const { return ring_used_ + overflow_.size(); }
  // For tests.
  size_t ring_capacity() const { return capacity_; }
  size_t overflow_size() const { return overflow_.size(); }

 private:
  static constexpr size_t kInitialCapacity = 32;

  size_t Index(uint64_t correlation_id) const {
    return static_cast<size_t>(CorrelationShards::LocalIndex(correlation_id)) & mask_;
  }
  // Ids newer than any in the overflow were never put there, and new
  // launches are newer than everything before them.
  bool NotInOverflow(uint64_t correlation_id) const {
    return overflow_.empty() || correlation_id > overflow_newest_;
  }
  static void Reset(CorrelationSlot& slot, uint64_t correlation_id);
  CorrelationSlot* FindInOverflow(uint64_t correlation_id);
  CorrelationSlot& FindOrInsertSlow(uint64_t correlation_id);
  CorrelationSlot& InsertIntoOverflow(uint64_t correlation_id);
  bool ShouldGrow() const;
  void Grow();

  std::unique_ptr<CorrelationSlot[]> ring_;
  size_t capacity_ = 0;  // a power of two, or 0 before the first insert
  size_t mask_ = 0;
  size_t ring_used_ = 0;
  size_t max_capacity_ = kInitialCapacity;
  // Lookups that found their id in the overflow since the ring last grew.
  size_t overflow_hits_since_growth_ = 0;
  std::unordered_map<uint64_t, CorrelationSlot> overflow_;
  uint64_t overflow_newest_ = 0;  // highest id put there since it was empty
};

}  // namespace deepcontext::gpu
