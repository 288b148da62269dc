// A thread's stack of open ops, for the per-op paths that keep one (the
// call-path builder's, OpMetrics's timers): std::vector's interface as far
// as they and EndedElsewhere use it, with a push that is inline and resets
// the entry field by field (Entry::Reset()). std::vector's emplace_back was
// an out-of-line call on every op entry that saved six registers for its
// growing path and value-initialized the entry with `rep stos`; inline, it
// also put the growing path's allocation and copy into the op path's code.
// Room is made before a Push (MakeRoom: a check on the op path, the growth
// out of line), so that references to the entries below stay valid while
// the new one is filled.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace deepcontext {

template <typename Entry>
class ShadowStack {
 public:
  using value_type = Entry;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  Entry& operator[](size_t i) { return data_[i]; }
  const Entry& operator[](size_t i) const { return data_[i]; }
  Entry& back() { return data_[size_ - 1]; }
  const Entry& back() const { return data_[size_ - 1]; }
  Entry* begin() { return data_.get(); }
  Entry* end() { return data_.get() + size_; }

  // Makes room for one more Push.
  void MakeRoom() {
    if (size_ == capacity_) [[unlikely]] Grow();
  }
  // The entry on top, reset; room must have been made (MakeRoom).
  Entry& Push() {
    Entry& entry = data_[size_++];
    entry.Reset();
    return entry;
  }
  void pop_back() { --size_; }
  // Drops the entries from `count` up (never grows the stack).
  void resize(size_t count) {
    if (count < size_) size_ = static_cast<uint32_t>(count);
  }
  void clear() { size_ = 0; }
  void erase(Entry* at) {
    std::move(at + 1, end(), at);
    --size_;
  }

 private:
  [[gnu::noinline, gnu::cold]] void Grow() {
    const size_t count = std::max<size_t>(16, 2 * size_t{capacity_});
    auto grown = std::make_unique<Entry[]>(count);
    std::copy(begin(), end(), grown.get());
    data_ = std::move(grown);
    capacity_ = static_cast<uint32_t>(count);
  }

  std::unique_ptr<Entry[]> data_;
  // 32-bit: with the pointer, 16 bytes of the line of per-thread state
  // that holds the stack.
  uint32_t size_ = 0;
  uint32_t capacity_ = 0;
};

}  // namespace deepcontext
