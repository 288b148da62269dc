#include "runtime/gpu/buffer_worker.h"

#include <unistd.h>

#include <utility>

#include "runtime/common/all_signals_blocked.h"
#include "runtime/common/thread_name.h"

namespace deepcontext::gpu {

BufferWorker::BufferWorker(std::function<void(const CompletedBuffer&)> handle)
    : handle_(std::move(handle)) {}

BufferWorker::~BufferWorker() {
  const pid_t owner = owner_.load(std::memory_order_acquire);
  if (owner != 0 && owner != getpid()) {
    // A forked child: the thread (and maybe the mutex's holder) stayed in
    // the parent.
    if (thread_.joinable()) thread_.detach();
    return;
  }
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool BufferWorker::Submit(const CompletedBuffer& buffer) noexcept {
  const pid_t self = getpid();
  const pid_t owner = owner_.load(std::memory_order_acquire);
  if (owner != 0 && owner != self) return false;  // a forked child
  try {
    std::lock_guard<std::mutex> guard(mutex_);
    if (stop_) return false;
    if (owner_.load(std::memory_order_relaxed) == 0) {
      {
        const AllSignalsBlocked blocked;  // the worker starts without them
        thread_ = std::thread(&BufferWorker::Run, this);
      }
      owner_.store(self, std::memory_order_release);
    }
    queue_.push_back(buffer);
    ++submitted_;
  } catch (...) {
    return false;
  }
  work_.notify_one();
  return true;
}

void BufferWorker::Drain() {
  // Nothing was queued in this process (or this is a forked child).
  if (owner_.load(std::memory_order_acquire) != getpid()) return;
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = submitted_;
  done_.wait(lock, [&] { return handled_ >= target; });
}

uint64_t BufferWorker::handled() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return handled_;
}

void BufferWorker::Run() {
  NameThisThread("dc-gpu-records");
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything handled
    const CompletedBuffer buffer = queue_.front();
    queue_.pop_front();
    lock.unlock();
    try {
      handle_(buffer);
    } catch (...) {
      // Out of memory while attributing: lose this buffer's records, keep
      // the thread.
    }
    lock.lock();
    ++handled_;
    done_.notify_all();
  }
}

}  // namespace deepcontext::gpu
