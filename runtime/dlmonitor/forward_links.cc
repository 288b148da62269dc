#include "runtime/dlmonitor/forward_links.h"

#include "runtime/common/prefetch.h"

namespace deepcontext::dlmonitor {

ForwardLinks::ForwardLinks() = default;
ForwardLinks::~ForwardLinks() = default;

void ForwardLinks::Allocate() {
  std::call_once(allocate_once_, [this] {
    storage_ = std::make_unique<Set[]>(kSets);
    sets_.store(storage_.get(), std::memory_order_release);
  });
}

void ForwardLinks::Remember(uint64_t thread_id, int64_t sequence_number,
                            ContextId anchor) {
  if (sequence_number < 0 || anchor == kNoContext) return;
  if (sets_.load(std::memory_order_acquire) == nullptr) [[unlikely]] Allocate();
  const uint64_t key = Key(thread_id, sequence_number);
  Set& set = SetFor(thread_id, sequence_number);
  std::lock_guard<SpinLock> guard(set.lock);
  for (Entry& entry : set.ways) {
    if (entry.anchor != kNoContext && entry.key == key) {
      entry.anchor = anchor;
      return;
    }
  }
  set.ways[set.next] = Entry{key, anchor};
  set.next = static_cast<uint8_t>((set.next + 1) % kWays);
  // The next op that records history takes the next number, and its set
  // was last written by the backward pass on another thread.
  PrefetchForWrite(&SetFor(thread_id, sequence_number + 1));
}

ContextId ForwardLinks::Find(uint64_t thread_id,
                             int64_t sequence_number) const {
  if (sequence_number < 0 || sets_.load(std::memory_order_acquire) == nullptr) {
    return kNoContext;
  }
  const uint64_t key = Key(thread_id, sequence_number);
  Set& set = SetFor(thread_id, sequence_number);
  // A backward pass runs its functions from the highest number down, and
  // the forward pass on another thread wrote their sets: the lock's
  // exchange would wait for the line.
  if (sequence_number > 0) PrefetchForWrite(&SetFor(thread_id, sequence_number - 1));
  std::lock_guard<SpinLock> guard(set.lock);
  for (const Entry& entry : set.ways) {
    if (entry.anchor != kNoContext && entry.key == key) return entry.anchor;
  }
  return kNoContext;
}

void ForwardLinks::Clear() {
  Set* sets = sets_.load(std::memory_order_acquire);
  if (sets == nullptr) return;
  for (size_t i = 0; i < kSets; ++i) {
    std::lock_guard<SpinLock> guard(sets[i].lock);
    for (Entry& entry : sets[i].ways) entry = Entry{};
    sets[i].next = 0;
  }
}

}  // namespace deepcontext::dlmonitor
