#include "runtime/gpu/correlation_slots.h"

#include <algorithm>
#include <bit>

namespace deepcontext::gpu {

void CorrelationSlots::LimitRing(size_t entries) {
  max_capacity_ = std::bit_ceil(std::max<size_t>(entries, 1));
}

void CorrelationSlots::Reset(CorrelationSlot& slot, uint64_t correlation_id) {
  slot.correlation_id = correlation_id;
  slot.launch.context = 0;
  slot.launch.thread = 0;
  slot.launch.expected_records = 1;
  slot.launch.api_name_length = 0;
  slot.seen = 0;
  slot.epoch = 0;
  slot.state = SlotState::kFree;
  slot.record_at_return = false;
  slot.counted_unanswered = false;
}

CorrelationSlot* CorrelationSlots::FindInOverflow(uint64_t correlation_id) {
  auto it = overflow_.find(correlation_id);
  if (it == overflow_.end()) return nullptr;
  ++overflow_hits_since_growth_;
  return &it->second;
}

CorrelationSlot& CorrelationSlots::FindOrInsertSlow(uint64_t correlation_id) {
  if (CorrelationSlot* found = Find(correlation_id)) return *found;
  for (;;) {
    if (ring_ == nullptr) {
      Grow();
      continue;
    }
    CorrelationSlot& home = ring_[Index(correlation_id)];
    if (home.state == SlotState::kFree) {
      ++ring_used_;
      Reset(home, correlation_id);
      return home;
    }
    if (ShouldGrow()) {
      Grow();
      continue;
    }
    if (home.correlation_id > correlation_id) return InsertIntoOverflow(correlation_id);
    // The newer id keeps the ring: records are claimed in about id order,
    // so it is the one looked up soon; the older one is a straggler.
    overflow_.emplace(home.correlation_id, home);
    overflow_newest_ = std::max(overflow_newest_, home.correlation_id);
    Reset(home, correlation_id);
    return home;
  }
}

CorrelationSlot& CorrelationSlots::InsertIntoOverflow(uint64_t correlation_id) {
  CorrelationSlot& slot = overflow_[correlation_id];
  Reset(slot, correlation_id);
  overflow_newest_ = std::max(overflow_newest_, correlation_id);
  return slot;
}

bool CorrelationSlots::ShouldGrow() const {
  if (capacity_ >= max_capacity_) return false;
  // Half full: the window of waiting launches is about as wide as the
  // ring. Spilled ids looked up again: they were in the window, whose ids
  // are sparse in this shard, and it is still wider than the ring.
  return ring_used_ * 2 > capacity_ || overflow_hits_since_growth_ * 16 > capacity_;
}

void CorrelationSlots::Grow() {
  const size_t capacity =
      capacity_ == 0 ? std::min(kInitialCapacity, max_capacity_) : capacity_ * 2;
  auto ring = std::make_unique<CorrelationSlot[]>(capacity);
  const size_t mask = capacity - 1;
  auto home = [&](uint64_t id) -> CorrelationSlot& {
    return ring[static_cast<size_t>(CorrelationShards::LocalIndex(id)) & mask];
  };
  // Old slot i moves to i or i + capacity_: no two entries meet.
  for (size_t i = 0; i < capacity_; ++i) {
    if (ring_[i].state != SlotState::kFree) home(ring_[i].correlation_id) = ring_[i];
  }
  for (auto it = overflow_.begin(); it != overflow_.end();) {
    CorrelationSlot& slot = home(it->first);
    if (slot.state != SlotState::kFree) {
      ++it;
      continue;
    }
    slot = it->second;
    ++ring_used_;
    it = overflow_.erase(it);
  }
  if (overflow_.empty()) overflow_newest_ = 0;
  ring_ = std::move(ring);
  capacity_ = capacity;
  mask_ = mask;
  overflow_hits_since_growth_ = 0;
}

void CorrelationSlots::Erase(CorrelationSlot& slot) {
  if (ring_ != nullptr && &slot >= ring_.get() && &slot < ring_.get() + capacity_) {
    slot.state = SlotState::kFree;
    --ring_used_;
    return;
  }
  overflow_.erase(slot.correlation_id);
  if (overflow_.empty()) overflow_newest_ = 0;
}

}  // namespace deepcontext::gpu
