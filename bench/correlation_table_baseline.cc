#include "bench/correlation_table_baseline.h"

#include <algorithm>

namespace deepcontext::bench::baseline {

CorrelationTable::CorrelationTable(size_t max_launches, size_t max_parked)
    : max_per_shard_(std::max<size_t>(max_launches / kShards, 2)),
      max_parked_(max_parked) {}

bool CorrelationTable::AddLaunch(const LaunchRecord& launch, uint32_t epoch) {
  Shard& shard = ShardOf(launch.correlation_id);
  bool ready = false;
  {
    std::lock_guard<SpinLock> guard(shard.mutex);
    Entry& entry = shard.entries[launch.correlation_id];
    entry.launch.context = launch.context;
    entry.launch.thread = launch.thread;
    entry.launch.expected_records = launch.expected_records;
    entry.launch.SetApiName(launch.api_name);
    entry.launched = true;
    entry.record_at_return = launch.record_at_return;
    entry.epoch = epoch;
    ready = !entry.parked.empty();
    if (!ready && shard.entries.size() > max_per_shard_) EvictOldest(shard);
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
  std::vector<uint64_t> ids;
  ids.reserve(shard.entries.size());
  for (const auto& [id, entry] : shard.entries) {
    if (entry.launched && entry.parked.empty()) ids.push_back(id);
  }
  const size_t evict = ids.size() / 2;
  if (evict == 0) return;
  std::nth_element(ids.begin(), ids.begin() + evict, ids.end());
  for (size_t i = 0; i < evict; ++i) shard.entries.erase(ids[i]);
  evicted_.fetch_add(evict, std::memory_order_relaxed);
}

void CorrelationTable::CountRecord(Shard& shard, EntryMap::iterator it,
                                   uint32_t records) {
  Entry& entry = it->second;
  entry.seen += records;
  if (entry.launch.expected_records != 0 &&
      entry.seen >= entry.launch.expected_records && entry.parked.empty()) {
    shard.entries.erase(it);
  }
}

void CorrelationTable::Forget(uint64_t correlation_id) {
  Shard& shard = ShardOf(correlation_id);
  std::lock_guard<SpinLock> guard(shard.mutex);
  auto it = shard.entries.find(correlation_id);
  if (it != shard.entries.end() && it->second.launched &&
      it->second.parked.empty()) {
    shard.entries.erase(it);
  }
}

bool CorrelationTable::Claim(uint64_t correlation_id, LaunchInfo* info) {
  Shard& shard = ShardOf(correlation_id);
  std::lock_guard<SpinLock> guard(shard.mutex);
  auto it = shard.entries.find(correlation_id);
  if (it == shard.entries.end() || !it->second.launched) return false;
  *info = it->second.launch;
  CountRecord(shard, it, 1);
  return true;
}

CorrelationTable::ParkResult CorrelationTable::Park(uint64_t correlation_id,
                                                    PendingRecord&& record,
                                                    LaunchInfo* info) {
  Shard& shard = ShardOf(correlation_id);
  std::lock_guard<SpinLock> guard(shard.mutex);
  auto it = shard.entries.find(correlation_id);
  if (it != shard.entries.end() && it->second.launched) {
    *info = it->second.launch;
    CountRecord(shard, it, 1);
    return ParkResult::kLaunched;
  }
  // Only the processing thread parks, so check-then-add cannot overshoot.
  if (parked_.load(std::memory_order_relaxed) >= max_parked_) {
    return ParkResult::kFull;
  }
  shard.entries[correlation_id].parked.push_back(std::move(record));
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
      auto it = shard.entries.find(id);
      if (it == shard.entries.end() || !it->second.launched) continue;
      info = it->second.launch;
      records.swap(it->second.parked);
      parked_.fetch_sub(records.size(), std::memory_order_relaxed);
      CountRecord(shard, it, static_cast<uint32_t>(records.size()));
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
      for (auto it = shard.entries.begin(); it != shard.entries.end();) {
        Entry& entry = it->second;
        if (!entry.parked.empty()) {
          parked_.fetch_sub(entry.parked.size(), std::memory_order_relaxed);
          if (entry.launched) {
            entry.seen += static_cast<uint32_t>(entry.parked.size());
            launched.emplace_back(entry.launch, std::move(entry.parked));
          } else {
            orphans.push_back(std::move(entry.parked));
          }
          entry.parked.clear();
        }
        const bool keep = entry.launched && entry.launch.expected_records != 0 &&
                          entry.seen < entry.launch.expected_records;
        it = keep ? std::next(it) : shard.entries.erase(it);
      }
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
    for (auto& [id, entry] : shard.entries) {
      if (entry.launched && !entry.counted_unanswered &&
          !entry.record_at_return && entry.launch.expected_records > 0 &&
          entry.seen == 0 && entry.parked.empty() &&
          entry.epoch < before_epoch && id > newest_record) {
        entry.counted_unanswered = true;
        ++count;
      }
    }
  }
  return count;
}

size_t CorrelationTable::size() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard<SpinLock> guard(shard.mutex);
    total += shard.entries.size();
  }
  return total;
}

}  // namespace deepcontext::bench::baseline
