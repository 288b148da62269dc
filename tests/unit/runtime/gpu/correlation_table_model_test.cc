// CorrelationTable against a plain std::map model of its documented
// behaviour, over random operation sequences that crowd a few shards with
// ids equal modulo their rings, old and out-of-order ids, parked records,
// evictions and flushes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "runtime/gpu/correlation_table.h"

namespace deepcontext::gpu {
namespace {

struct ModelEntry {
  bool launched = false;
  ContextId context = 0;
  uint32_t expected = 1;
  bool record_at_return = false;
  bool counted = false;
  uint32_t seen = 0;
  uint32_t epoch = 0;
  std::vector<uint64_t> parked;  // record tags
};

class Model {
 public:
  Model(size_t max_launches, size_t max_parked)
      : max_per_shard_(std::max<size_t>(max_launches / 64, 2)), max_parked_(max_parked) {}

  bool AddLaunch(uint64_t id, ContextId context, uint32_t expected, bool at_return,
                 uint32_t epoch) {
    ModelEntry& entry = entries_[id];
    entry.launched = true;
    entry.context = context;
    entry.expected = expected;
    entry.record_at_return = at_return;
    entry.epoch = epoch;
    const bool ready = !entry.parked.empty();
    if (ready) {
      ready_.push_back(id);
    } else if (ShardIds(id, false).size() > max_per_shard_) {
      std::vector<uint64_t> ids = ShardIds(id, true);
      std::sort(ids.begin(), ids.end());
      for (size_t i = 0; i < ids.size() / 2; ++i) entries_.erase(ids[i]);
      evicted_ += ids.size() / 2;
    }
    return ready;
  }
  void Forget(uint64_t id) {
    auto it = entries_.find(id);
    if (it != entries_.end() && it->second.launched && it->second.parked.empty()) {
      entries_.erase(it);
    }
  }
  // The claimed context, or -1.
  int64_t Claim(uint64_t id) {
    auto it = entries_.find(id);
    if (it == entries_.end() || !it->second.launched) return -1;
    const auto context = static_cast<int64_t>(it->second.context);
    Count(it, 1);
    return context;
  }
  // kParked / kFull as -1 / -2, else the claimed context.
  int64_t Park(uint64_t id, uint64_t tag) {
    const int64_t claimed = Claim(id);
    if (claimed >= 0) return claimed;
    if (parked_ >= max_parked_) return -2;
    entries_[id].parked.push_back(tag);
    ++parked_;
    return -1;
  }
  // (context, tags) per visit, in visit order.
  std::vector<std::pair<ContextId, std::vector<uint64_t>>> TakeReady() {
    std::vector<std::pair<ContextId, std::vector<uint64_t>>> visits;
    std::vector<uint64_t> ids;
    ids.swap(ready_);
    for (uint64_t id : ids) {
      auto it = entries_.find(id);
      if (it == entries_.end() || !it->second.launched) continue;
      std::vector<uint64_t> tags;
      tags.swap(it->second.parked);
      parked_ -= tags.size();
      const ContextId context = it->second.context;
      Count(it, static_cast<uint32_t>(tags.size()));
      if (!tags.empty()) visits.emplace_back(context, std::move(tags));
    }
    return visits;
  }
  // (launched, context, tags) per visit, sorted.
  std::vector<std::tuple<bool, ContextId, std::vector<uint64_t>>> Flush() {
    std::vector<std::tuple<bool, ContextId, std::vector<uint64_t>>> visits;
    for (auto it = entries_.begin(); it != entries_.end();) {
      ModelEntry& entry = it->second;
      if (!entry.parked.empty()) {
        parked_ -= entry.parked.size();
        if (entry.launched) entry.seen += static_cast<uint32_t>(entry.parked.size());
        visits.emplace_back(entry.launched, entry.launched ? entry.context : 0,
                            std::move(entry.parked));
        entry.parked.clear();
      }
      const bool keep = entry.launched && entry.expected != 0 && entry.seen < entry.expected;
      it = keep ? std::next(it) : entries_.erase(it);
    }
    std::sort(visits.begin(), visits.end());
    return visits;
  }
  uint64_t CountUnanswered(uint32_t before_epoch, uint64_t newest_record) {
    uint64_t count = 0;
    for (auto& [id, entry] : entries_) {
      if (entry.launched && !entry.counted && !entry.record_at_return &&
          entry.expected > 0 && entry.seen == 0 && entry.parked.empty() &&
          entry.epoch < before_epoch && id > newest_record) {
        entry.counted = true;
        ++count;
      }
    }
    return count;
  }
  size_t size() const { return entries_.size(); }
  size_t parked() const { return parked_; }
  uint64_t evicted() const { return evicted_; }

 private:
  static uint64_t Shard(uint64_t id) { return (id >> 6) % 64; }
  std::vector<uint64_t> ShardIds(uint64_t id, bool evictable_only) const {
    std::vector<uint64_t> ids;
    for (const auto& [other, entry] : entries_) {
      if (Shard(other) != Shard(id)) continue;
      if (evictable_only && !(entry.launched && entry.parked.empty())) continue;
      ids.push_back(other);
    }
    return ids;
  }
  void Count(std::map<uint64_t, ModelEntry>::iterator it, uint32_t records) {
    ModelEntry& entry = it->second;
    entry.seen += records;
    if (entry.expected != 0 && entry.seen >= entry.expected && entry.parked.empty()) {
      entries_.erase(it);
    }
  }

  const size_t max_per_shard_;
  const size_t max_parked_;
  std::map<uint64_t, ModelEntry> entries_;
  std::vector<uint64_t> ready_;
  size_t parked_ = 0;
  uint64_t evicted_ = 0;
};

uint64_t Tag(const PendingRecord& record) { return std::get<SyncRecord>(record).start_ns; }

std::vector<uint64_t> Tags(const std::vector<PendingRecord>& records) {
  std::vector<uint64_t> tags;
  for (const PendingRecord& record : records) tags.push_back(Tag(record));
  return tags;
}

// Launches and records pick ids mostly among the last `window` ids of a
// shard.
void RunRandomSequence(uint32_t seed, size_t max_launches, size_t max_parked, int steps,
                       uint64_t window) {
  SCOPED_TRACE(testing::Message() << "seed " << seed << ", max_launches " << max_launches);
  std::mt19937_64 random(seed);
  auto uniform = [&](uint64_t below) { return random() % below; };
  CorrelationTable table(max_launches, max_parked);
  Model model(max_launches, max_parked);
  uint64_t next_local = 0;  // ids advance like the vendor's, per shard
  uint32_t epoch = 0;
  uint64_t next_tag = 1;
  // Mostly recent ids of two shards, sometimes old ones (stragglers, ids
  // equal modulo small rings), sometimes other shards.
  auto pick_id = [&]() -> uint64_t {
    const uint64_t shard = uniform(10) == 0 ? uniform(64) : uniform(2);
    uint64_t local = 0;
    switch (uniform(8)) {
      case 0:
        local = uniform(next_local + 1);
        break;
      case 1:
        local = next_local > 64 ? next_local - 64 * (1 + uniform(4)) : 0;
        break;
      default:
        local = next_local > window ? next_local - uniform(window) : uniform(window);
    }
    return ((local >> 6) << 12) | (shard << 6) | (local & 63);
  };
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE(testing::Message() << "step " << step);
    const uint64_t op = uniform(100);
    if (op < 35) {
      next_local += uniform(3);
      const uint64_t id = pick_id();
      LaunchRecord launch;
      launch.correlation_id = id;
      launch.context = 1 + uniform(1000);
      launch.api_name = "cuLaunchKernel";
      launch.expected_records = static_cast<uint32_t>(uniform(4));
      launch.record_at_return = uniform(8) == 0;
      ASSERT_EQ(table.AddLaunch(launch, epoch),
                model.AddLaunch(id, launch.context, launch.expected_records,
                                launch.record_at_return, epoch));
    } else if (op < 65) {
      const uint64_t id = pick_id();
      LaunchInfo info;
      const int64_t expected = model.Claim(id);
      ASSERT_EQ(table.Claim(id, &info), expected >= 0);
      if (expected >= 0) {
        ASSERT_EQ(info.context, static_cast<ContextId>(expected));
      }
    } else if (op < 80) {
      const uint64_t id = pick_id();
      SyncRecord record;
      record.start_ns = next_tag++;
      LaunchInfo info;
      const int64_t expected = model.Park(id, record.start_ns);
      const auto result = table.Park(id, PendingRecord(record), &info);
      if (expected == -1) {
        ASSERT_EQ(result, CorrelationTable::ParkResult::kParked);
      } else if (expected == -2) {
        ASSERT_EQ(result, CorrelationTable::ParkResult::kFull);
      } else {
        ASSERT_EQ(result, CorrelationTable::ParkResult::kLaunched);
        ASSERT_EQ(info.context, static_cast<ContextId>(expected));
      }
    } else if (op < 87) {
      const uint64_t id = pick_id();
      table.Forget(id);
      model.Forget(id);
    } else if (op < 95) {
      std::vector<std::pair<ContextId, std::vector<uint64_t>>> visits;
      table.TakeReady([&](const LaunchInfo& info, std::vector<PendingRecord>& records) {
        visits.emplace_back(info.context, Tags(records));
      });
      ASSERT_EQ(visits, model.TakeReady());
    } else if (op < 97) {
      if (uniform(2) == 0) ++epoch;
      const uint64_t newest = uniform(2) == 0 ? 0 : pick_id();
      ASSERT_EQ(table.CountUnanswered(epoch, newest), model.CountUnanswered(epoch, newest));
    } else {
      std::vector<std::tuple<bool, ContextId, std::vector<uint64_t>>> visits;
      table.Flush([&](const LaunchInfo* info, std::vector<PendingRecord>& records) {
        visits.emplace_back(info != nullptr, info != nullptr ? info->context : 0,
                            Tags(records));
      });
      std::sort(visits.begin(), visits.end());
      ASSERT_EQ(visits, model.Flush());
    }
    ASSERT_EQ(table.size(), model.size());
    ASSERT_EQ(table.parked(), model.parked());
    ASSERT_EQ(table.evicted(), model.evicted());
  }
}

TEST(CorrelationTableModelTest, SmallRingsMatchTheModel) {
  // 2 and 8 launches per shard: rings of 2 and 8 slots, constant eviction.
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    RunRandomSequence(seed, 64 * 2, 8, 3000, 16);
    RunRandomSequence(seed, 64 * 8, 32, 3000, 16);
  }
}

TEST(CorrelationTableModelTest, LargeRingsMatchTheModel) {
  // Rings that grow (hundreds of launches wait) and spill stragglers,
  // rarely evicting.
  for (uint32_t seed = 100; seed <= 105; ++seed) {
    RunRandomSequence(seed, 64 * 256, 64, 20000, 400);
    RunRandomSequence(seed, 64 * 64, 64, 20000, 100);
  }
}

}  // namespace
}  // namespace deepcontext::gpu
