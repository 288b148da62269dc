// Buffers handed to CUPTI for activity records. CUPTI asks for one whenever
// it fills the previous one, on whatever thread is launching at that
// moment, so buffers are recycled instead of allocated (and page-faulted in)
// each time. Every buffer handed out is all zero: a released one is cleared
// by the thread releasing it (the record worker), so that CUPTI, told so
// (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER), skips clearing 8 MiB on
// the launching thread. No vendor headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace deepcontext::cupti {

class ActivityBufferPool {
 public:
  // 8 MiB: CUPTI recommends 1 to 10 MB; fewer, larger buffers mean fewer
  // completion callbacks.
  static constexpr size_t kDefaultBufferSize = size_t{8} << 20;
  // CUPTI requires 8-byte alignment; buffers are whole pages.
  static constexpr size_t kAlignment = 4096;

  // Keeps at most `max_free` released buffers for reuse; the rest are freed.
  explicit ActivityBufferPool(size_t buffer_size = kDefaultBufferSize,
                              size_t max_free = 4);
  ActivityBufferPool(const ActivityBufferPool&) = delete;
  ActivityBufferPool& operator=(const ActivityBufferPool&) = delete;
  // Unmaps the pooled buffers; buffers still out are the holder's to
  // release.
  ~ActivityBufferPool();

  // A buffer of buffer_size() zero bytes, or nullptr when out of memory.
  // [any thread; never throws]
  uint8_t* Acquire();
  // Takes a buffer back (nullptr is ignored), clearing it if it is kept.
  // [any thread; never throws]
  void Release(uint8_t* buffer);

  size_t buffer_size() const { return buffer_size_; }
  // Buffers currently handed out / kept for reuse / allocated in total.
  size_t outstanding() const;
  size_t pooled() const;
  uint64_t allocated() const;

 private:
  void Unmap(uint8_t* buffer) const;

  const size_t buffer_size_;
  const size_t max_free_;
  mutable std::mutex mutex_;  // guards everything below
  std::vector<uint8_t*> free_;  // capacity max_free_, so pushing never throws
  size_t clearing_ = 0;  // released buffers being cleared, to join free_
  size_t outstanding_ = 0;
  uint64_t allocated_ = 0;
};

}  // namespace deepcontext::cupti
