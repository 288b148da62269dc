// A hash map kept in one array (open addressing, linear probing, a
// power-of-two number of slots, at most half of them used) for lookups on
// an event's path: a thread's own caches, or a table under its owner's
// lock. A hit reads the slot the key hashes to, or a few slots
// after it on the same lines, where std::unordered_map reads a bucket and
// then a node elsewhere on the heap: two misses once the program's work
// between two lookups has evicted them, which is where a native capture's
// path lookup spent its time on ResNet-50. Insertion and clear only: the
// caches it serves start over when full, and the tables keep what they
// insert.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace deepcontext {

template <typename Key, typename Value, typename Hash>
class FlatHashMap {
 public:
  // The value of `key`, or nullptr. [the owning thread, or under its lock]
  Value* Find(const Key& key) {
    if (slots_.empty()) return nullptr;
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (!slot.used) return nullptr;
      if (slot.key == key) return &slot.value;
    }
  }

  // The value of `key`, default-constructed and inserted when absent.
  // References returned earlier may move.
  Value& operator[](const Key& key) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (!slot.used) {
        slot.used = true;
        slot.key = key;
        ++size_;
        return slot.value;
      }
      if (slot.key == key) return slot.value;
    }
  }

  size_t size() const { return size_; }

  // Drops every entry and the slots' memory.
  void clear() {
    std::vector<Slot>().swap(slots_);
    size_ = 0;
    mask_ = 0;
    shift_ = 64;
  }

 private:
  struct Slot {
    Key key{};
    Value value{};
    bool used = false;
  };
  static constexpr size_t kInitialSlots = 64;

  // The key's hash spread by a multiplication, its top bits the slot: the
  // callers' hashes need not mix their low bits well.
  size_t Home(const Key& key) const {
    return static_cast<size_t>((static_cast<uint64_t>(Hash{}(key)) * 0x9E3779B97F4A7C15ULL) >>
                               shift_);
  }

  void Grow() {
    const size_t count = slots_.empty() ? kInitialSlots : slots_.size() * 2;
    std::vector<Slot> old(count);
    old.swap(slots_);
    mask_ = count - 1;
    shift_ = 64;
    for (size_t n = count; n > 1; n >>= 1) --shift_;
    for (Slot& slot : old) {
      if (!slot.used) continue;
      size_t i = Home(slot.key);
      while (slots_[i].used) i = (i + 1) & mask_;
      slots_[i] = std::move(slot);
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
  size_t mask_ = 0;
  int shift_ = 64;
};

}  // namespace deepcontext
