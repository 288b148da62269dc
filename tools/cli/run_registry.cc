#include "tools/cli/run_registry.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>

namespace deepcontext::cli {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxMessage = 8192;

sockaddr_un AbstractAddress(const std::string& name, socklen_t* length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  // Abstract namespace: a leading NUL, no file, gone when the socket closes.
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 +
                                   name.size());
  return address;
}

bool IsRunning(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

// "SIGSEGV (signal 11, a crash)": the signal's name, and for those that a
// fault or an abort() raises, that the process crashed.
std::string SignalText(int signum) {
  const char* abbreviation = sigabbrev_np(signum);
  std::string text = abbreviation != nullptr ? std::string("SIG") + abbreviation
                                             : "a signal";
  text += " (signal " + std::to_string(signum);
  switch (signum) {
    case SIGSEGV:
    case SIGBUS:
    case SIGILL:
    case SIGFPE:
    case SIGABRT:
      text += ", a crash";
      break;
    default:
      break;
  }
  return text + ")";
}

}  // namespace

StatusOr<std::unique_ptr<RunRegistry>> RunRegistry::Bind(const std::string& output) {
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(output, ec);
  if (ec) canonical = output;
  char hash[32];
  std::snprintf(hash, sizeof(hash), "%016zx",
                std::hash<std::string>{}(canonical.string()));
  const std::string name = std::string("deepcontext-run/") + hash;
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    return Status::Error(std::string("cannot create a socket: ") + std::strerror(errno));
  }
  socklen_t length = 0;
  const sockaddr_un address = AbstractAddress(name, &length);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    const int error = errno;
    close(fd);
    return Status::Error(
        error == EADDRINUSE
            ? "another `deepcontext run` is writing " + output +
                  " now; wait for it to end or choose another -o"
            : std::string("cannot create a socket: ") + std::strerror(error));
  }
  return std::unique_ptr<RunRegistry>(new RunRegistry(fd, name));
}

RunRegistry::~RunRegistry() { close(fd_); }

void RunRegistry::Receive(int timeout_ms) {
  pollfd waiting{fd_, POLLIN, 0};
  if (poll(&waiting, 1, timeout_ms) <= 0) return;
  char buffer[kMaxMessage];
  while (true) {
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;
    Handle(std::string(buffer, static_cast<size_t>(n)));
  }
}

// "<event>\t<pid>\t<detail>", event: started, wrote or lost.
void RunRegistry::Handle(const std::string& message) {
  const size_t first = message.find('\t');
  const size_t second = message.find('\t', first + 1);
  if (first == std::string::npos || second == std::string::npos) return;
  const std::string event = message.substr(0, first);
  pid_t pid = 0;
  try {
    pid = static_cast<pid_t>(std::stol(message.substr(first + 1, second - first - 1)));
  } catch (const std::exception&) {
    return;
  }
  Process& process = processes_[pid];
  if (event == "started") {
    // A pid seen again is a program that replaced itself (exec) with
    // another Python process: it writes again.
    process = Process{};
  } else if (event == "wrote") {
    process = Process{Outcome::kWrote, message.substr(second + 1)};
  } else if (event == "lost") {
    process = Process{Outcome::kLost, message.substr(second + 1)};
  }
}

void RunRegistry::Ended(pid_t pid, int wait_status) {
  if (WIFSIGNALED(wait_status)) killed_by_[pid] = WTERMSIG(wait_status);
}

void RunRegistry::AwaitStragglers(int grace_ms) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  Receive(0);
  while (std::chrono::steady_clock::now() < deadline) {
    const bool waiting = std::any_of(
        processes_.begin(), processes_.end(), [](const auto& entry) {
          return entry.second.outcome == Outcome::kRunning &&
                 IsRunning(entry.first);
        });
    if (!waiting) break;
    Receive(50);
  }
  Receive(0);
}

std::vector<std::string> RunRegistry::Written(const std::string& root) const {
  std::vector<std::string> written;
  for (const auto& [pid, process] : processes_) {
    if (process.outcome == Outcome::kWrote &&
        std::find(written.begin(), written.end(), process.detail) ==
            written.end()) {
      written.push_back(process.detail);
    }
  }
  std::sort(written.begin(), written.end(),
            [&root](const std::string& a, const std::string& b) {
              if ((a == root) != (b == root)) return a == root;
              return a < b;
            });
  return written;
}

std::vector<std::string> RunRegistry::Problems() const {
  std::vector<std::string> problems;
  for (const auto& [pid, process] : processes_) {
    const std::string who = "process " + std::to_string(pid);
    if (process.outcome == Outcome::kLost) {
      problems.push_back(who + " lost its profile: " + process.detail);
    } else if (process.outcome == Outcome::kRunning) {
      const auto killed = killed_by_.find(pid);
      if (killed != killed_by_.end()) {
        problems.push_back(who + " died of " + SignalText(killed->second) +
                           " before writing its profile");
      } else {
        problems.push_back(
            IsRunning(pid)
                ? who + " is still running; its profile is written when it "
                        "exits and is not listed here"
                : who + " ended without writing its profile (killed "
                        "before it could, e.g. by SIGKILL, or crashed, or it "
                        "replaced itself with a program that is not Python)");
      }
    }
  }
  return problems;
}

}  // namespace deepcontext::cli
