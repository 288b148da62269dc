// A thread of the profiler's own that processes completed activity
// buffers. CUPTI 13 keeps one activity buffer per launching thread and
// hands it back on that thread when it is full, inside the CUDA call that
// filled it: processing its tens of thousands of records there would stall
// the application for milliseconds (measured on the H200: record processing
// ran on the Python and autograd threads). With this worker the completion
// callback only queues the buffer. Other vendors' tracing libraries hand
// buffers back on their own threads too; the worker only sees opaque
// pointers. No vendor headers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include <sys/types.h>

namespace deepcontext::gpu {

// A completed buffer as the tracing library hands it back.
struct CompletedBuffer {
  void* context = nullptr;  // the library's device context (CUcontext)
  uint32_t stream_id = 0;
  uint8_t* data = nullptr;
  size_t valid_size = 0;
};

class BufferWorker {
 public:
  // `handle` processes one buffer and owns it from then on (releases it).
  // It runs on the worker thread, one buffer at a time, in the order the
  // buffers were submitted.
  explicit BufferWorker(std::function<void(const CompletedBuffer&)> handle);
  BufferWorker(const BufferWorker&) = delete;
  BufferWorker& operator=(const BufferWorker&) = delete;
  // Handles what is still queued, then ends the thread.
  ~BufferWorker();

  // Queues a buffer for the worker thread, which is started on first use.
  // False when it cannot be queued (no thread could be started, out of
  // memory, or a forked child, which has no worker thread): the caller then
  // handles the buffer itself. [any thread; never throws]
  bool Submit(const CompletedBuffer& buffer) noexcept;
  // Returns once every buffer submitted before the call has been handled.
  // Never call it from `handle`. [any thread but the worker's]
  void Drain();

  // Buffers handled by the worker thread so far.
  uint64_t handled() const;

 private:
  void Run();

  const std::function<void(const CompletedBuffer&)> handle_;
  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable work_;  // a buffer was queued, or stop_
  std::condition_variable done_;  // handled_ grew
  std::deque<CompletedBuffer> queue_;
  uint64_t submitted_ = 0;
  uint64_t handled_ = 0;
  bool stop_ = false;
  // The process the thread runs in; 0 before it starts. Read without the
  // mutex so that a forked child, whose copy of the mutex may be held by a
  // thread it does not have, never takes it.
  std::atomic<pid_t> owner_{0};
  std::thread thread_;
};

}  // namespace deepcontext::gpu
