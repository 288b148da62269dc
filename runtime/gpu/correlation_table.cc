#include "runtime/gpu/correlation_table.h"

#include <algorithm>

namespace deepcontext::gpu {

CorrelationTable::CorrelationTable(size_t max_launches, size_t max_parked)
    : max_per_shard_(std::max<size_t>(max_launches / kShards, 2)),
      max_parked_(max_parked) {
  for (Shard& shard : shards_) shard.slots.LimitRing(max_per_shard_);
}

bool CorrelationTable::AddLaunch(const LaunchRecord& launch, uint32_t epoch) {
  Shard& shard = ShardOf(launch.correlation_id);
  bool ready = false;
  {
    std::lock_guard<SpinLock> guard(shard.mutex);
    CorrelationSlot& slot = shard.slots.FindOrInsert(launch.correlation_id);
    slot.launch.context = launch.context;
    slot.launch.thread = launch.thread;
    slot.launch.expected_records = launch.expected_records;
    slot.launch.SetApiName(launch.api_name);
    slot.record_at_return = launch.record_at_return;
    slot.epoch = epoch;
    ready = slot.has_parked();
    slot.state = ready ? SlotState::kReady : SlotState::kLaunched;
    if (!ready && shard.slots.size() > max_per_shard_) EvictOldest(shard);
    // The next launches' slots, while this shard's ring is known (under
    // its lock); ids of other calls may lie between two launches.
    shard.slots.PrefetchAfter(launch.correlation_id, kPrefetchedSlots);
  }
  if (ready) {
    std::lock_guard<std::mutex> guard(ready_mutex_);
    ready_.push_back(launch.correlation_id);
    has_ready_.store(true, std::memory_order_release);
  }
  return ready;
}

void CorrelationTable::EvictOldest(Shard& shard) {
  // Evict the older half of the launches in one sweep so the cost is
  // amortized over many inserts. Entries holding parked records are never
  // evicted here: those are bounded by max_parked_ and released by Flush.
  std::vector<uint64_t>& ids = shard.eviction_ids;
  ids.clear();
  shard.slots.ForEach([&](const CorrelationSlot& slot) {
    if (slot.state == SlotState::kLaunched) ids.push_back(slot.correlation_id);
  });
  const size_t evict = ids.size() / 2;
  if (evict == 0) return;
  std::nth_element(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(evict), ids.end());
  const uint64_t oldest_kept = ids[evict];
  shard.slots.EraseIf([&](const CorrelationSlot& slot) {
    return slot.state == SlotState::kLaunched && slot.correlation_id < oldest_kept;
  });
  evicted_.fetch_add(evict, std::memory_order_relaxed);
}

void CorrelationTable::CountRecord(Shard& shard, CorrelationSlot& slot,
                                   uint32_t records) {
  slot.seen += records;
  if (slot.launch.expected_records != 0 &&
      slot.seen >= slot.launch.expected_records &&
      slot.state == SlotState::kLaunched) {
    shard.slots.Erase(slot);
  }
}

void CorrelationTable::Forget(uint64_t correlation_id) {
  Shard& shard = ShardOf(correlation_id);
  std::lock_guard<SpinLock> guard(shard.mutex);
  CorrelationSlot* slot = shard.slots.Find(correlation_id);
  if (slot != nullptr && slot->state == SlotState::kLaunched) {
    shard.slots.Erase(*slot);
  }
}

bool CorrelationTable::Claim(uint64_t correlation_id, LaunchInfo* info) {
  Shard& shard = ShardOf(correlation_id);
  std::lock_guard<SpinLock> guard(shard.mutex);
  CorrelationSlot* slot = shard.slots.Find(correlation_id);
  if (slot == nullptr || !slot->launched()) return false;
  *info = slot->launch;
  CountRecord(shard, *slot, 1);
  return true;
}

CorrelationTable::ParkResult CorrelationTable::Park(uint64_t correlation_id,
                                                    PendingRecord&& record,
                                                    LaunchInfo* info) {
  Shard& shard = ShardOf(correlation_id);
  std::lock_guard<SpinLock> guard(shard.mutex);
  CorrelationSlot* slot = shard.slots.Find(correlation_id);
  if (slot != nullptr && slot->launched()) {
    *info = slot->launch;
    CountRecord(shard, *slot, 1);
    return ParkResult::kLaunched;
  }
  // Only the processing thread parks, so check-then-add cannot overshoot.
  if (parked_.load(std::memory_order_relaxed) >= max_parked_) {
    return ParkResult::kFull;
  }
  if (slot == nullptr) {
    shard.slots.FindOrInsert(correlation_id).state = SlotState::kWaiting;
  }
  shard.parked[correlation_id].push_back(std::move(record));
  parked_.fetch_add(1, std::memory_order_relaxed);
  return ParkResult::kParked;
}

void CorrelationTable::TakeReady(
    const std::function<void(const LaunchInfo&, std::vector<PendingRecord>&)>&
        visit) {
  if (!has_ready_.load(std::memory_order_acquire)) return;
  std::vector<uint64_t> ids;
  {
    std::lock_guard<std::mutex> guard(ready_mutex_);
    ids.swap(ready_);
    has_ready_.store(false, std::memory_order_relaxed);
  }
  for (uint64_t id : ids) {
    Shard& shard = ShardOf(id);
    LaunchInfo info;
    std::vector<PendingRecord> records;
    {
      std::lock_guard<SpinLock> guard(shard.mutex);
      CorrelationSlot* slot = shard.slots.Find(id);
      if (slot == nullptr || !slot->launched()) continue;
      info = slot->launch;
      if (slot->state == SlotState::kReady) {
        auto parked = shard.parked.find(id);
        records.swap(parked->second);
        shard.parked.erase(parked);
        parked_.fetch_sub(records.size(), std::memory_order_relaxed);
        slot->state = SlotState::kLaunched;
      }
      CountRecord(shard, *slot, static_cast<uint32_t>(records.size()));
    }
    // The sink is called without a shard lock held: it may be slow and
    // must not stall launching threads.
    if (!records.empty()) visit(info, records);
  }
}

void CorrelationTable::Flush(
    const std::function<void(const LaunchInfo*, std::vector<PendingRecord>&)>&
        visit) {
  for (Shard& shard : shards_) {
    std::vector<std::pair<LaunchInfo, std::vector<PendingRecord>>> launched;
    std::vector<std::vector<PendingRecord>> orphans;
    {
      std::lock_guard<SpinLock> guard(shard.mutex);
      shard.slots.EraseIf([&](CorrelationSlot& slot) {
        if (slot.has_parked()) {
          auto parked = shard.parked.find(slot.correlation_id);
          std::vector<PendingRecord> records = std::move(parked->second);
          shard.parked.erase(parked);
          parked_.fetch_sub(records.size(), std::memory_order_relaxed);
          if (slot.state == SlotState::kReady) {
            slot.seen += static_cast<uint32_t>(records.size());
            slot.state = SlotState::kLaunched;
            launched.emplace_back(slot.launch, std::move(records));
          } else {
            orphans.push_back(std::move(records));
          }
        }
        const bool keep = slot.launched() && slot.launch.expected_records != 0 &&
                          slot.seen < slot.launch.expected_records;
        return !keep;
      });
    }
    for (auto& [info, records] : launched) visit(&info, records);
    for (auto& records : orphans) visit(nullptr, records);
  }
}

uint64_t CorrelationTable::CountUnanswered(uint32_t before_epoch,
                                           uint64_t newest_record) {
  uint64_t count = 0;
  for (Shard& shard : shards_) {
    std::lock_guard<SpinLock> guard(shard.mutex);
    shard.slots.ForEach([&](CorrelationSlot& slot) {
      if (slot.state == SlotState::kLaunched && !slot.counted_unanswered &&
          !slot.record_at_return && slot.launch.expected_records > 0 &&
          slot.seen == 0 && slot.epoch < before_epoch &&
          slot.correlation_id > newest_record) {
        slot.counted_unanswered = true;
        ++count;
      }
    });
  }
  return count;
}

size_t CorrelationTable::size() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard<SpinLock> guard(shard.mutex);
    total += shard.slots.size();
  }
  return total;
}

}  // namespace deepcontext::gpu
