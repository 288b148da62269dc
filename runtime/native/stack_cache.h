// Interns captured native stacks (pc arrays) into dense ids.
//
// Ops and GPU launches repeat the same few call paths millions of times.
// Interning turns a captured pc array into a small integer in one hash of
// the array, so a caller can keep "stack id -> calling-context node" in a
// flat array and skip the per-frame tree walk, the Python splice and the
// symbolization for every path it has seen before. Repeated paths are
// found in a per-thread cache without taking the table's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "runtime/common/chunked_array.h"

namespace deepcontext::native {

// Dense id of an interned stack: 1, 2, ... in order of first sight.
using StackId = uint32_t;
inline constexpr StackId kNoStack = 0;

class StackTable {
 public:
  // Bounds on memory: beyond them Intern returns kNoStack.
  static constexpr size_t kMaxStacks = size_t{1} << 20;
  static constexpr size_t kMaxWords = size_t{1} << 24;

  StackTable();
  ~StackTable();
  StackTable(const StackTable&) = delete;
  StackTable& operator=(const StackTable&) = delete;

  // The id of the stack pcs[0..count), creating it on first sight; equal
  // arrays get equal ids. kNoStack when the table is full or count is not
  // in 1..kMaxNativeDepth. [any thread] Allocates only for new stacks.
  StackId Intern(const uintptr_t* pcs, int count);

  // The pcs of an id returned by Intern (empty for kNoStack or unknown ids).
  // The span stays valid for the table's lifetime. [any thread]
  std::span<const uintptr_t> Get(StackId id) const;

  // Number of distinct stacks interned.
  size_t size() const;

  // The hash Intern uses; exposed for callers that keep their own caches.
  static uint64_t Hash(const uintptr_t* pcs, int count);

 private:
  struct Entry {
    const uintptr_t* pcs = nullptr;
    uint32_t count = 0;
    uint64_t hash = 0;
  };

  bool Matches(const Entry& entry, uint64_t hash, const uintptr_t* pcs,
               int count) const;
  // The slow path, under mutex_.
  StackId InternLocked(uint64_t hash, const uintptr_t* pcs, int count);
  uintptr_t* AllocateWords(size_t count);
  void GrowIndex();

  const uint64_t serial_;  // tells this table's entries in per-thread caches
  ChunkedArray<Entry, 12, 256> entries_;  // entry of id i at index i - 1
  mutable std::mutex mutex_;
  std::vector<StackId> index_;  // open addressing; kNoStack = empty slot
  size_t size_ = 0;
  std::vector<std::unique_ptr<uintptr_t[]>> word_chunks_;
  size_t chunk_used_ = 0;
  size_t words_ = 0;
};

}  // namespace deepcontext::native
