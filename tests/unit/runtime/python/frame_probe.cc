// Test probe: exposes the frame reader to Python through ctypes.
//
// ctypes.CDLL releases the GIL around every call, so a Python script calling
// these functions puts the reader in exactly the situation of a torch op
// callback: a Python thread blocked in native code, GIL released.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "runtime/python/python_frames.h"

namespace {

namespace py = deepcontext::python;

constexpr int kMaxFrames = 4096;

// Copies `text` into a caller buffer of `length` bytes, always terminating.
void CopyOut(const std::string& text, char* buffer, int length) {
  if (buffer == nullptr || length <= 0) return;
  const size_t count = std::min(text.size(), static_cast<size_t>(length - 1));
  text.copy(buffer, count);
  buffer[count] = '\0';
}

}  // namespace

extern "C" {

// Initializes the reader. Returns 1 on success; `why` receives the reason for
// a failure, or the detected version on success.
__attribute__((visibility("default"))) int dc_probe_init(char* why,
                                                         int length) {
  const deepcontext::Status initialized = py::Initialize();
  const bool ok = initialized.ok();
  CopyOut(ok ? std::string(py::VersionString()) : initialized.message(), why,
          length);
  return ok ? 1 : 0;
}

// Captures the calling thread (at most `max_frames` frames) and writes one
// "function\tfile\tline\n" line per frame, outermost first. Returns the frame
// count, -1 when a frame did not resolve, -2 when `buffer` is too small, -3
// when a capture from the thread state the first one returned
// (py::CaptureThread) saw other frames.
__attribute__((visibility("default"))) int dc_probe_capture(char* buffer,
                                                            int length,
                                                            int max_frames) {
  static thread_local py::RawFrame frames[kMaxFrames];
  static thread_local py::RawFrame again[kMaxFrames];
  max_frames = std::clamp(max_frames, 0, kMaxFrames);
  const void* thread_state = nullptr;
  const int count = py::CaptureCurrentThread(frames, max_frames, &thread_state);
  if ((count > 0) != (thread_state != nullptr)) return -3;
  if (count > 0) {
    if (py::CaptureThread(thread_state, again, max_frames) != count) return -3;
    for (int i = 0; i < count; ++i) {
      if (!(again[i] == frames[i])) return -3;
    }
  }
  std::string text;
  py::FrameInfo info;
  for (int i = 0; i < count; ++i) {
    if (!py::Resolve(frames[i], &info)) return -1;
    text += info.function + "\t" + info.file + "\t" +
            std::to_string(info.line) + "\n";
  }
  if (buffer == nullptr || text.size() + 1 > static_cast<size_t>(length)) {
    return -2;
  }
  CopyOut(text, buffer, length);
  return count;
}

// Frames seen by a thread CPython has never run on (expected: 0).
__attribute__((visibility("default"))) int dc_probe_capture_on_native_thread() {
  int count = -1;
  std::thread worker([&count] {
    py::RawFrame frames[16];
    count = py::CaptureCurrentThread(frames, 16);
  });
  worker.join();
  return count;
}

// Captures the calling thread `iterations` times and returns the mean cost of
// one capture in nanoseconds; `*frames` receives the frames per capture.
__attribute__((visibility("default"))) double dc_probe_time_capture(
    int iterations, int max_frames, int* frames) {
  static thread_local py::RawFrame buffer[kMaxFrames];
  max_frames = std::clamp(max_frames, 0, kMaxFrames);
  int count = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    count = py::CaptureCurrentThread(buffer, max_frames);
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  if (frames != nullptr) *frames = count;
  return std::chrono::duration<double, std::nano>(elapsed).count() /
         std::max(iterations, 1);
}

// Mean cost of resolving every frame of one capture, in nanoseconds per frame.
__attribute__((visibility("default"))) double dc_probe_time_resolve(
    int iterations, int max_frames) {
  static thread_local py::RawFrame buffer[kMaxFrames];
  const int count =
      py::CaptureCurrentThread(buffer, std::clamp(max_frames, 0, kMaxFrames));
  py::FrameInfo info;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    for (int j = 0; j < count; ++j) py::Resolve(buffer[j], &info);
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  return std::chrono::duration<double, std::nano>(elapsed).count() /
         std::max(iterations * count, 1);
}

}  // extern "C"
