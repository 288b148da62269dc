// The names of the calling process's threads (/proc/self/task/*/comm), for
// tests of the names the profiler gives its own threads.
#pragma once

#include <dirent.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace deepcontext::testing {

inline std::vector<std::string> ThreadNames() {
  std::vector<std::string> names;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return names;
  while (const dirent* task = readdir(tasks)) {
    if (task->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + task->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name)) names.push_back(name);
  }
  closedir(tasks);
  return names;
}

inline bool HasThreadNamed(const std::string& name) {
  for (const std::string& each : ThreadNames()) {
    if (each == name) return true;
  }
  return false;
}

// Waits up to `timeout` for a thread of that name to be present (or, with
// present false, gone); true when it came to be so.
inline bool WaitUntilThreadNamed(const std::string& name, bool present,
                                 std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (HasThreadNamed(name) == present) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// A thread names itself when it starts: waits up to `timeout` for it.
inline bool WaitForThreadNamed(const std::string& name,
                               std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  return WaitUntilThreadNamed(name, true, timeout);
}

// A joined thread's /proc entry can outlive the join by a moment (the kernel
// wakes the joiner before it reaps the task): waits up to `timeout` for it to go.
inline bool WaitForNoThreadNamed(const std::string& name,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  return WaitUntilThreadNamed(name, false, timeout);
}

}  // namespace deepcontext::testing
