#include "runtime/gpu/counter_claims.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/common/command_line.h"
#include "runtime/common/deliberate_leak.h"

namespace deepcontext::gpu {

namespace {

// "pid 4242 (python3 train.py --steps 10)": who holds a device, for the
// message another claimant shows, on one line of the lock file.
std::string DescribeThisProcess() {
  std::string command = ThisCommandLine();
  for (char& c : command) {
    if (c == '\n') c = ' ';
  }
  std::string text = "pid " + std::to_string(getpid());
  if (!command.empty()) text += " (" + command + ")";
  return text;
}

std::string ReadHolder(int fd) {
  std::string text(1024, '\0');
  const ssize_t got = pread(fd, text.data(), text.size(), 0);
  text.resize(got > 0 ? static_cast<size_t>(got) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text;
}

// The holder's text, unless it names a process that has ended: the kernel
// dropped that one's lock when it crashed, and the text stayed behind.
std::string LiveHolder(const std::string& text) {
  long long pid = 0;
  if (std::sscanf(text.c_str(), "pid %lld", &pid) == 1 && pid > 0 &&
      kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
    return "";
  }
  return text;
}

// Opens the lock file of a device, creating it readable and writable by
// every user, as GPUs are shared between them. *writable says whether the
// holder's text can be written into it.
int OpenLockFile(const std::string& path, bool* writable) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd >= 0) {
    fchmod(fd, 0666);  // past the umask; fails harmlessly on another user's file
  } else if (errno == EACCES) {
    // Another user's file: in a sticky directory such as /tmp, with
    // fs.protected_regular set (the default of systemd's sysctl settings),
    // O_CREAT alone is refused even though the file is writable by all.
    fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == EACCES) {
      fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);  // flock needs no write access
      *writable = false;
      return fd;
    }
  }
  *writable = fd >= 0;
  return fd;
}

std::string ErrnoText(int error) { return std::strerror(error); }

}  // namespace

CounterClaim::~CounterClaim() {
  if (owner_ != nullptr) owner_->Release(key_);
}

std::unique_ptr<CounterClaim> CounterClaims::Unnamed(std::string why) {
  return std::unique_ptr<CounterClaim>(new CounterClaim(nullptr, "", std::move(why)));
}

StatusOr<std::unique_ptr<CounterClaim>> SessionClaims::Claim(void* device_context) {
  if (!claim_device_) return std::unique_ptr<CounterClaim>();
  auto claim = claim_device_(device_context);
  if (claim.ok() && !(*claim)->uncoordinated().empty()) uncoordinated_ = (*claim)->uncoordinated();
  return claim;
}

std::string SessionClaims::StatusNote() const {
  return uncoordinated_.empty() ? "" : "; other processes not kept off the GPU: " + uncoordinated_;
}

CounterClaims::CounterClaims(std::string directory) : directory_(std::move(directory)) {}

CounterClaims::~CounterClaims() {
  std::lock_guard<std::mutex> guard(mutex_);
  for (auto& [key, held] : held_) {
    if (held.fd >= 0) close(held.fd);
  }
}

CounterClaims& CounterClaims::ForProcess() {
  static CounterClaims* claims = [] {
    const char* named = std::getenv("DEEPCONTEXT_LOCK_DIR");
    auto* created = new CounterClaims(named != nullptr && named[0] != '\0' ? named : "/tmp");
    // Lives as long as the process: claims are given back at stop, and
    // the kernel drops the locks when the process ends.
    MarkDeliberatelyLeaked(created);
    pthread_atfork([] { ForProcess().LockBeforeFork(); }, [] { ForProcess().UnlockAfterFork(); },
                   [] { ForProcess().ForgetInChild(); });
    return created;
  }();
  return *claims;
}

std::string CounterClaims::PathFor(const std::string& key) const {
  std::string name;
  for (char c : key) {
    const bool plain = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                       (c >= 'A' && c <= 'Z') || c == '-' || c == '.' || c == '_';
    name += plain ? c : '_';
  }
  return directory_ + "/deepcontext-gpu-" + name + ".lock";
}

StatusOr<std::unique_ptr<CounterClaim>> CounterClaims::Claim(const std::string& key,
                                                             const std::string& purpose) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto make = [&](std::string uncoordinated) {
    return std::unique_ptr<CounterClaim>(new CounterClaim(this, key, std::move(uncoordinated)));
  };
  if (auto it = held_.find(key); it != held_.end()) {
    ++it->second.claims;
    return make(it->second.uncoordinated);
  }
  const std::string path = PathFor(key);
  bool writable = false;
  const int fd = OpenLockFile(path, &writable);
  if (fd < 0) {
    const std::string why = "cannot open " + path + ": " + ErrnoText(errno);
    held_[key] = Held{-1, 1, why};
    return make(why);
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    if (error == EWOULDBLOCK) {
      std::string holder = LiveHolder(ReadHolder(fd));
      close(fd);
      if (holder.empty()) holder = "another process";
      return Status::Error("GPU " + key + " is in use by " + holder +
                           ": one process per GPU may sample its instructions or measure its "
                           "counters at a time (lock file " + path + ")");
    }
    close(fd);
    const std::string why = "cannot lock " + path + ": " + ErrnoText(error);
    held_[key] = Held{-1, 1, why};
    return make(why);
  }
  bool wrote_holder = false;
  if (writable && ftruncate(fd, 0) == 0) {
    const std::string holder = DescribeThisProcess() + ", " + purpose + "\n";
    // The lock holds either way; the text only helps messages.
    wrote_holder = pwrite(fd, holder.data(), holder.size(), 0) > 0;
  }
  held_[key] = Held{fd, 1, "", wrote_holder};
  return make("");
}

void CounterClaims::Release(const std::string& key) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = held_.find(key);
  if (it == held_.end() || --it->second.claims > 0) return;
  if (it->second.fd >= 0) {
    // Emptied while still locked: a next holder that cannot write its own
    // text (another user's file it may only read) then shows none, rather
    // than naming this process, which no longer holds the GPU.
    if (it->second.wrote_holder) (void)!ftruncate(it->second.fd, 0);
    flock(it->second.fd, LOCK_UN);
    close(it->second.fd);
  }
  held_.erase(it);
}

void CounterClaims::LockBeforeFork() { mutex_.lock(); }

void CounterClaims::UnlockAfterFork() { mutex_.unlock(); }

void CounterClaims::ForgetInChild() {
  // close() only: the lock belongs to the open file the parent shares,
  // and LOCK_UN here would give the parent's claim away. With the map
  // empty, the child's copies of CounterClaim objects release nothing.
  for (auto& [key, held] : held_) {
    if (held.fd >= 0) close(held.fd);
  }
  held_.clear();
  mutex_.unlock();
}

}  // namespace deepcontext::gpu
