#include "runtime/cupti/activity_buffer_pool.h"

#include <sys/mman.h>

#include <cstring>

namespace deepcontext::cupti {

ActivityBufferPool::ActivityBufferPool(size_t buffer_size, size_t max_free)
    : buffer_size_((buffer_size + kAlignment - 1) / kAlignment * kAlignment),
      max_free_(max_free) {
  free_.reserve(max_free_);
}

ActivityBufferPool::~ActivityBufferPool() {
  for (uint8_t* buffer : free_) Unmap(buffer);
}

uint8_t* ActivityBufferPool::Acquire() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!free_.empty()) {
      uint8_t* buffer = free_.back();
      free_.pop_back();
      ++outstanding_;
      return buffer;
    }
  }
  // Fresh anonymous pages read as zero and are faulted in as CUPTI writes,
  // instead of all at once by a clearing pass on the launching thread.
  void* mapped = mmap(nullptr, buffer_size_, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return nullptr;
  auto* buffer = static_cast<uint8_t*>(mapped);
  std::lock_guard<std::mutex> guard(mutex_);
  ++outstanding_;
  ++allocated_;
  return buffer;
}

void ActivityBufferPool::Unmap(uint8_t* buffer) const {
  munmap(buffer, buffer_size_);
}

void ActivityBufferPool::Release(uint8_t* buffer) {
  if (buffer == nullptr) return;
  bool keep = false;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (outstanding_ > 0) --outstanding_;
    // Its room is held while it is cleared outside the lock, so that
    // concurrent releases cannot overfill the pool meanwhile.
    keep = free_.size() + clearing_ < max_free_;
    if (keep) ++clearing_;
  }
  if (!keep) {
    Unmap(buffer);
    return;
  }
  std::memset(buffer, 0, buffer_size_);
  std::lock_guard<std::mutex> guard(mutex_);
  --clearing_;
  free_.push_back(buffer);
}

size_t ActivityBufferPool::outstanding() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return outstanding_;
}

size_t ActivityBufferPool::pooled() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return free_.size();
}

uint64_t ActivityBufferPool::allocated() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return allocated_;
}

}  // namespace deepcontext::cupti
