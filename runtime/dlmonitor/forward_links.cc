#include "runtime/dlmonitor/forward_links.h"

namespace deepcontext::dlmonitor {

void ForwardLinks::Remember(uint64_t thread_id, int64_t sequence_number,
                            ContextId anchor) {
  if (sequence_number < 0 || anchor == kNoContext) return;
  const uint64_t key = Key(thread_id, sequence_number);
  Shard& shard = ShardFor(key);
  std::lock_guard<std::mutex> guard(shard.mutex);
  auto [it, inserted] = shard.anchors.emplace(key, anchor);
  if (!inserted) {
    it->second = anchor;
    return;
  }
  shard.order.push_back(key);
  if (shard.order.size() > kMaxPerShard) {
    shard.anchors.erase(shard.order.front());
    shard.order.pop_front();
  }
}

ContextId ForwardLinks::Find(uint64_t thread_id,
                             int64_t sequence_number) const {
  if (sequence_number < 0) return kNoContext;
  const uint64_t key = Key(thread_id, sequence_number);
  Shard& shard = ShardFor(key);
  std::lock_guard<std::mutex> guard(shard.mutex);
  auto it = shard.anchors.find(key);
  return it == shard.anchors.end() ? kNoContext : it->second;
}

void ForwardLinks::Clear() {
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> guard(shard.mutex);
    shard.anchors.clear();
    shard.order.clear();
  }
}

}  // namespace deepcontext::dlmonitor
