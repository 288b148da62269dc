#include "runtime/cupti/activity_buffer_pool.h"

#include <cstdlib>

namespace deepcontext::cupti {

ActivityBufferPool::ActivityBufferPool(size_t buffer_size, size_t max_free)
    // aligned_alloc needs a size that is a multiple of the alignment.
    : buffer_size_((buffer_size + kAlignment - 1) / kAlignment * kAlignment),
      max_free_(max_free) {
  free_.reserve(max_free_);
}

ActivityBufferPool::~ActivityBufferPool() {
  for (uint8_t* buffer : free_) std::free(buffer);
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
  auto* buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, buffer_size_));
  if (buffer == nullptr) return nullptr;
  std::lock_guard<std::mutex> guard(mutex_);
  ++outstanding_;
  ++allocated_;
  return buffer;
}

void ActivityBufferPool::Release(uint8_t* buffer) {
  if (buffer == nullptr) return;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (outstanding_ > 0) --outstanding_;
    if (free_.size() < max_free_) {
      free_.push_back(buffer);
      return;
    }
  }
  std::free(buffer);
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
