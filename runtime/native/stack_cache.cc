#include "runtime/native/stack_cache.h"

#include <atomic>
#include <cstring>
#include <new>

#include "runtime/common/hot_path.h"
#include "runtime/common/thread_instance.h"
#include "runtime/native/native_stack.h"

namespace deepcontext::native {
namespace {

constexpr size_t kWordChunk = size_t{1} << 16;
constexpr size_t kInitialIndex = size_t{1} << 12;
constexpr int kThreadCacheSlots = 256;

std::atomic<uint64_t> g_next_serial{1};

// Direct-mapped cache of recently interned stacks, per thread. Entries are
// immutable once their id was handed out, so a thread that got an id can
// read its entry again without the lock.
struct ThreadCache {
  uint64_t serial = 0;
  struct Slot {
    uint64_t hash = 0;
    StackId id = kNoStack;
  } slots[kThreadCacheSlots];
};

// The calling thread's cache for the table with `serial`; nullptr while the
// thread exits. On the heap, which keeps the runtime's thread-locals small
// enough for the dynamic loader to place them in static TLS (see
// -mtls-dialect in CMakeLists.txt).
ThreadCache* LocalCache(uint64_t serial) {
  ThreadCache* cache = ThreadInstance<ThreadCache>();
  if (cache != nullptr && cache->serial != serial) [[unlikely]] {
    *cache = ThreadCache{};
    cache->serial = serial;
  }
  return cache;
}

}  // namespace

StackTable::StackTable()
    : serial_(g_next_serial.fetch_add(1, std::memory_order_relaxed)),
      index_(kInitialIndex, kNoStack) {}

StackTable::~StackTable() = default;

DEEPCONTEXT_HOT
uint64_t StackTable::Hash(const uintptr_t* pcs, int count) {
  // Two independent lanes (even and odd frames): each step waits on a
  // multiply of the step before, and stacks run to a hundred frames, hashed
  // at every op entered from Python with --native.
  constexpr uint64_t kMultiplier = 0xff51afd7ed558ccdULL;
  uint64_t even = 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(count);
  uint64_t odd = 0xc2b2ae3d27d4eb4fULL;
  int i = 0;
  for (; i + 1 < count; i += 2) {
    even = (even ^ static_cast<uint64_t>(pcs[i])) * kMultiplier;
    even ^= even >> 29;
    odd = (odd ^ static_cast<uint64_t>(pcs[i + 1])) * kMultiplier;
    odd ^= odd >> 29;
  }
  if (i < count) {
    even = (even ^ static_cast<uint64_t>(pcs[i])) * kMultiplier;
    even ^= even >> 29;
  }
  uint64_t h = (even ^ (odd * 0x9e3779b97f4a7c15ULL)) * kMultiplier;
  return h ^ (h >> 29);
}

bool StackTable::Matches(const Entry& entry, uint64_t hash,
                         const uintptr_t* pcs, int count) const {
  return entry.hash == hash && entry.count == static_cast<uint32_t>(count) &&
         std::memcmp(entry.pcs, pcs, sizeof(uintptr_t) * count) == 0;
}

DEEPCONTEXT_HOT
StackId StackTable::Intern(const uintptr_t* pcs, int count) {
  if (pcs == nullptr || count <= 0 || count > kMaxNativeDepth) {
    return kNoStack;
  }
  const uint64_t hash = Hash(pcs, count);
  ThreadCache* cache = LocalCache(serial_);
  ThreadCache::Slot* slot =
      cache != nullptr ? &cache->slots[hash % kThreadCacheSlots] : nullptr;
  if (slot != nullptr && slot->id != kNoStack && slot->hash == hash) {
    const Entry* entry = entries_.At(slot->id - 1);
    if (entry != nullptr && Matches(*entry, hash, pcs, count)) [[likely]] return slot->id;
  }
  StackId id;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    id = InternLocked(hash, pcs, count);
  }
  if (id != kNoStack && slot != nullptr) {
    slot->hash = hash;
    slot->id = id;
  }
  return id;
}

StackId StackTable::InternLocked(uint64_t hash, const uintptr_t* pcs,
                                 int count) {
  const size_t mask = index_.size() - 1;
  size_t i = hash & mask;
  for (; index_[i] != kNoStack; i = (i + 1) & mask) {
    const Entry* entry = entries_.At(index_[i] - 1);
    if (Matches(*entry, hash, pcs, count)) return index_[i];
  }
  if (size_ >= kMaxStacks) return kNoStack;
  uintptr_t* words = AllocateWords(static_cast<size_t>(count));
  if (words == nullptr) return kNoStack;
  size_t slot_index = 0;
  Entry* entry = entries_.Append(&slot_index);
  if (entry == nullptr) return kNoStack;
  std::memcpy(words, pcs, sizeof(uintptr_t) * count);
  entry->pcs = words;
  entry->count = static_cast<uint32_t>(count);
  entry->hash = hash;
  const StackId id = static_cast<StackId>(slot_index + 1);
  index_[i] = id;
  ++size_;
  // Keep the load factor at most 1/2 so probes stay short.
  if (size_ * 2 > index_.size()) GrowIndex();
  return id;
}

uintptr_t* StackTable::AllocateWords(size_t count) {
  if (words_ + count > kMaxWords) return nullptr;
  // A stack never straddles two chunks: its span must be contiguous.
  if (word_chunks_.empty() || chunk_used_ + count > kWordChunk) {
    std::unique_ptr<uintptr_t[]> chunk(new (std::nothrow)
                                           uintptr_t[kWordChunk]);
    if (chunk == nullptr) return nullptr;
    word_chunks_.push_back(std::move(chunk));
    chunk_used_ = 0;
  }
  uintptr_t* words = word_chunks_.back().get() + chunk_used_;
  chunk_used_ += count;
  words_ += count;
  return words;
}

void StackTable::GrowIndex() {
  std::vector<StackId> grown(index_.size() * 2, kNoStack);
  const size_t mask = grown.size() - 1;
  for (StackId id : index_) {
    if (id == kNoStack) continue;
    size_t i = entries_.At(id - 1)->hash & mask;
    while (grown[i] != kNoStack) i = (i + 1) & mask;
    grown[i] = id;
  }
  index_.swap(grown);
}

std::span<const uintptr_t> StackTable::Get(StackId id) const {
  if (id == kNoStack) return {};
  const Entry* entry = entries_.At(id - 1);
  if (entry == nullptr || entry->pcs == nullptr) return {};
  return {entry->pcs, entry->count};
}

size_t StackTable::size() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return size_;
}

}  // namespace deepcontext::native
