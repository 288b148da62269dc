// Names for the profiler's own threads. Tools that show a process's
// threads (top -H, perf, gdb, py-spy) then tell them from the
// application's, and a perf profile can separate the work the application
// waits for from the work the profiler does beside it.
#pragma once

#include <pthread.h>

#include <cstring>

namespace deepcontext {

// Linux keeps 15 characters of a thread's name (16 with the NUL).
inline constexpr size_t kMaxThreadName = 15;

// Names the calling thread `name`, cut to kMaxThreadName characters. Every
// profiler thread's name starts with "dc-". A failure leaves the name the
// thread inherited: nothing depends on it.
inline void NameThisThread(const char* name) {
  char cut[kMaxThreadName + 1] = {};
  std::memcpy(cut, name, strnlen(name, kMaxThreadName));
  pthread_setname_np(pthread_self(), cut);
}

}  // namespace deepcontext
