// An append-only array whose elements never move, readable without locks.
//
// Elements live in fixed-size chunks reached through atomic chunk pointers,
// so a reader holding an index below the published size can dereference it
// while another thread appends. Used for context nodes and strings, whose
// addresses are handed out and must stay valid for the process lifetime.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>

namespace deepcontext {

template <typename T, size_t kChunkBits = 12, size_t kMaxChunks = 1 << 14>
class ChunkedArray {
 public:
  static constexpr size_t kChunkSize = size_t{1} << kChunkBits;
  static constexpr size_t kCapacity = kChunkSize * kMaxChunks;

  ChunkedArray() {
    for (auto& chunk : chunks_) chunk.store(nullptr, std::memory_order_relaxed);
  }
  ~ChunkedArray() {
    for (auto& chunk : chunks_) delete[] chunk.load(std::memory_order_relaxed);
  }
  ChunkedArray(const ChunkedArray&) = delete;
  ChunkedArray& operator=(const ChunkedArray&) = delete;

  // Reserves the next index and returns a default-constructed slot for it,
  // or nullptr when full or out of memory. [any thread]
  T* Append(size_t* index) {
    size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    T* slot = Ensure(i);
    if (slot != nullptr) *index = i;
    return slot;
  }

  // The slot at index, allocating its chunk on first use (for arrays used
  // as sparse maps from dense ids, without Append). nullptr when out of
  // range or out of memory. [any thread]
  T* Ensure(size_t index) {
    if (index >= kCapacity) return nullptr;
    size_t c = index >> kChunkBits;
    T* chunk = chunks_[c].load(std::memory_order_acquire);
    if (chunk == nullptr) {
      std::lock_guard<std::mutex> guard(grow_mutex_);
      chunk = chunks_[c].load(std::memory_order_acquire);
      if (chunk == nullptr) {
        chunk = new (std::nothrow) T[kChunkSize]();
        if (chunk == nullptr) return nullptr;
        chunks_[c].store(chunk, std::memory_order_release);
      }
    }
    return &chunk[index & (kChunkSize - 1)];
  }

  // The slot at index, or nullptr if its chunk was never allocated.
  T* At(size_t index) const {
    if (index >= kCapacity) return nullptr;
    T* chunk = chunks_[index >> kChunkBits].load(std::memory_order_acquire);
    return chunk == nullptr ? nullptr : &chunk[index & (kChunkSize - 1)];
  }

  // Number of indices handed out (some may still be being initialized).
  size_t Reserved() const {
    size_t n = next_.load(std::memory_order_acquire);
    return n < kCapacity ? n : kCapacity;
  }

 private:
  std::atomic<T*> chunks_[kMaxChunks];
  std::atomic<size_t> next_{0};
  std::mutex grow_mutex_;
};

}  // namespace deepcontext
