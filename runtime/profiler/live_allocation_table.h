// The live allocations of MemoryMetrics, by (device, address): an
// open-addressing hash table (linear probing, deletion by backward shift,
// so no tombstones pile up). A framework allocates and frees blocks at
// every op, from inside its allocator with its lock held; a node-based map
// allocates or recycles a node and chases a pointer per event, this table
// touches one or two cache lines of one array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace deepcontext::profiler {

template <typename Value>
class LiveAllocationTable {
 public:
  LiveAllocationTable() = default;
  LiveAllocationTable(const LiveAllocationTable&) = delete;
  LiveAllocationTable& operator=(const LiveAllocationTable&) = delete;

  // The value of (device, address), or nullptr. Valid until the next
  // Insert or Erase.
  Value* Find(int32_t device, uint64_t address) {
    if (size_ == 0) return nullptr;
    for (size_t i = Home(device, address);; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (!slot.used) return nullptr;
      if (slot.address == address && slot.device == device) return &slot.value;
    }
  }

  // Adds (device, address), which must be absent, and returns its value
  // slot holding `value`.
  Value* Insert(int32_t device, uint64_t address, const Value& value) {
    // At most half full: probes stay short even for addresses in strides.
    if ((size_ + 1) * 2 > capacity()) Grow();
    size_t i = Home(device, address);
    while (slots_[i].used) i = (i + 1) & mask_;
    slots_[i] = Slot{address, device, true, value};
    ++size_;
    return &slots_[i].value;
  }

  // Removes the entry whose value `Find` returned.
  void Erase(Value* found) {
    Slot* slot = reinterpret_cast<Slot*>(reinterpret_cast<char*>(found) -
                                         offsetof(Slot, value));
    size_t hole = static_cast<size_t>(slot - slots_.get());
    // Backward shift: move later entries of the probe run into the hole
    // unless that would put them before their home slot.
    for (size_t i = (hole + 1) & mask_; slots_[i].used; i = (i + 1) & mask_) {
      const size_t home = Home(slots_[i].device, slots_[i].address);
      // Distance from home to i and from home to the hole, cyclically.
      if (((i - home) & mask_) >= ((i - hole) & mask_)) {
        slots_[hole] = slots_[i];
        hole = i;
      }
    }
    slots_[hole].used = false;
    --size_;
  }

  size_t size() const { return size_; }
  size_t capacity() const { return slots_ ? mask_ + 1 : 0; }

  // Forgets every entry and frees the array.
  void Clear() {
    slots_.reset();
    mask_ = 0;
    size_ = 0;
  }

 private:
  struct Slot {
    uint64_t address = 0;
    int32_t device = 0;
    bool used = false;
    Value value{};
  };
  // Small: a table sized to the blocks live stays in the L1 cache (a
  // program that frees what it allocates in each op has a few).
  static constexpr size_t kInitialCapacity = 64;

  size_t Home(int32_t device, uint64_t address) const {
    // Blocks are aligned: the low bits say little. A multiplicative hash
    // spreads them over the high bits, of which the top ones are kept.
    const uint64_t key =
        address ^ (static_cast<uint64_t>(static_cast<uint32_t>(device)) << 48);
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> (64 - bits_)) & mask_;
  }

  // Out of line, so that Insert inlines into its caller.
  __attribute__((noinline)) void Grow() {
    const size_t old_capacity = capacity();
    std::unique_ptr<Slot[]> old = std::move(slots_);
    const size_t new_capacity = old_capacity == 0 ? kInitialCapacity : old_capacity * 2;
    slots_ = std::make_unique<Slot[]>(new_capacity);
    mask_ = new_capacity - 1;
    bits_ = 0;
    while ((size_t{1} << bits_) < new_capacity) ++bits_;
    size_ = 0;
    for (size_t i = 0; i < old_capacity; ++i) {
      if (old[i].used) Insert(old[i].device, old[i].address, old[i].value);
    }
  }

  std::unique_ptr<Slot[]> slots_;
  size_t mask_ = 0;
  int bits_ = 0;
  size_t size_ = 0;
};

}  // namespace deepcontext::profiler
