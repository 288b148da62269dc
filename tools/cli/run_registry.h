// What the processes of one `deepcontext run` did with their profiles.
//
// Every profiled process tells the launcher, through an abstract Unix
// datagram socket named in DEEPCONTEXT_RUN_SOCKET, that it started, wrote
// its profile or lost it (python/deepcontext/_launch.py). The list of
// written profiles is therefore exact (no stale file from an earlier run,
// no late child missed), a process that died without writing is named, and
// the socket's name, derived from the output path, keeps two runs from
// writing the same profiles at once.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace deepcontext::cli {

class RunRegistry {
 public:
  // Binds the socket for `output`; fails when another run writes it.
  static StatusOr<std::unique_ptr<RunRegistry>> Bind(const std::string& output);
  ~RunRegistry();
  RunRegistry(const RunRegistry&) = delete;
  RunRegistry& operator=(const RunRegistry&) = delete;

  // The value of DEEPCONTEXT_RUN_SOCKET for the processes.
  const std::string& name() const { return name_; }

  // Reads the messages that arrive within timeout_ms (returns early on a
  // signal, e.g. SIGCHLD).
  void Receive(int timeout_ms);

  // The launched process `pid` ended with `wait_status` (waitpid's): a
  // process of the run that died of a signal before writing its profile
  // is named with that signal rather than with guesses.
  void Ended(pid_t pid, int wait_status);

  // After the launched program ended: waits up to grace_ms for processes
  // that started but have not said whether they wrote their profile.
  void AwaitStragglers(int grace_ms);

  // The profiles written, the root's first; and one line per process that
  // lost its profile or still runs.
  std::vector<std::string> Written(const std::string& root) const;
  std::vector<std::string> Problems() const;
  bool AnyStarted() const { return !processes_.empty(); }

 private:
  enum class Outcome { kRunning, kWrote, kLost };
  struct Process {
    Outcome outcome = Outcome::kRunning;
    std::string detail;  // the path written, or why it was lost
  };

  RunRegistry(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  void Handle(const std::string& message);

  int fd_;
  std::string name_;
  std::map<pid_t, Process> processes_;
  // The signal each process whose end the launcher saw died of.
  std::map<pid_t, int> killed_by_;
};

}  // namespace deepcontext::cli
