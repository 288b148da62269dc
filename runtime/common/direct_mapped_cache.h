// A fixed-size, one-slot-per-hash cache for a thread's own hot lookups, in
// front of a shared map whose lock every op would otherwise take. A new key
// replaces whatever shared its slot; nothing is allocated after creation.
#pragma once

#include <array>
#include <cstddef>

namespace deepcontext {

template <typename Key, typename Value, typename Hash, size_t kSlots>
class DirectMappedCache {
 public:
  // The cached value of `key`, or nullptr.
  const Value* Find(const Key& key) const {
    const Slot& slot = slots_[Hash{}(key) % kSlots];
    return slot.used && slot.key == key ? &slot.value : nullptr;
  }

  void Put(const Key& key, const Value& value) {
    slots_[Hash{}(key) % kSlots] = Slot{key, value, true};
  }

  void Clear() { slots_.fill(Slot{}); }

 private:
  struct Slot {
    Key key{};
    Value value{};
    bool used = false;
  };
  std::array<Slot, kSlots> slots_{};
};

}  // namespace deepcontext
