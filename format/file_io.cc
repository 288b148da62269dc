#include "format/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>

namespace deepcontext::format {
namespace {

// Distinguishes temporary files of concurrent writes from one process; a
// constant-initialized atomic, so no global constructor runs.
std::atomic<uint64_t> temp_counter{0};

// Temporary names whose creation failed with EEXIST (a stale file left by a
// killed process that had the same pid) are retried this many times.
constexpr int kMaxCreateAttempts = 100;

// strerror_r comes in a GNU (returns char*) and an XSI (returns int) variant
// depending on feature macros; these overloads accept either.
[[maybe_unused]] const char* StrerrorResult(const char* message,
                                            const char* /*buffer*/) {
  return message;
}
[[maybe_unused]] const char* StrerrorResult(int /*status*/,
                                            const char* buffer) {
  return buffer;
}

std::string ErrnoText(int error) {
  char buffer[256] = "unknown error";
  return StrerrorResult(strerror_r(error, buffer, sizeof(buffer)), buffer);
}

// Closes a descriptor on every path out of a scope, including a bad_alloc.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;  // no progress and no reason given
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Makes the rename itself durable. Best effort: some file systems refuse to
// fsync directories, and the data is already safe in the renamed file.
void SyncDirectory(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  fsync(fd);
  close(fd);
}

// "<path>.<pid>.<n>.tmp", its file name cut to the 255 bytes a file name
// may have: a long profile name must not make its temporary uncreatable.
std::string TemporaryName(const std::string& path, uint64_t counter) {
  constexpr size_t kMaxNameBytes = 255;
  const std::string suffix = "." + std::to_string(getpid()) + "." +
                             std::to_string(counter) + ".tmp";
  const size_t slash = path.rfind('/');
  const size_t name_start = slash == std::string::npos ? 0 : slash + 1;
  std::string temp = path;
  if (path.size() - name_start + suffix.size() > kMaxNameBytes) {
    temp.resize(name_start + kMaxNameBytes - suffix.size());
  }
  return temp + suffix;
}

}  // namespace

std::string WriteFileAtomically(const std::string& path,
                                std::string_view bytes) {
  std::string temp;
  int fd = -1;
  int error = 0;
  for (int attempt = 0; attempt < kMaxCreateAttempts && fd < 0; ++attempt) {
    temp = TemporaryName(path, temp_counter.fetch_add(1));
    fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    error = errno;
    if (fd < 0 && error != EEXIST) break;
  }
  if (fd < 0) {
    return "cannot create temporary file " + temp + ": " + ErrnoText(error);
  }
  // Only fixed literals are chosen until the temporary file is gone, so a
  // bad_alloc while formatting the message cannot leave it behind.
  const char* step = nullptr;
  if (!WriteAll(fd, bytes)) {
    step = "cannot write ";
  } else if (fsync(fd) != 0) {
    step = "cannot sync ";
  }
  if (step != nullptr) error = errno;
  // close() reports delayed write errors (NFS, quotas), so it is checked too.
  if (close(fd) != 0 && step == nullptr) {
    step = "cannot close ";
    error = errno;
  }
  if (step == nullptr && rename(temp.c_str(), path.c_str()) != 0) {
    step = "cannot rename ";
    error = errno;
  }
  if (step != nullptr) {
    unlink(temp.c_str());
    return step + temp + ": " + ErrnoText(error);
  }
  try {
    SyncDirectory(DirectoryOf(path));
  } catch (const std::bad_alloc&) {
    // The file is complete and in place; only its durability is unconfirmed.
  }
  return "";
}

std::string ReadWholeFile(const std::string& path, std::string* bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "cannot open: " + ErrnoText(errno);
  FdCloser closer(fd);
  constexpr size_t kChunk = size_t{1} << 16;
  bytes->clear();
  struct stat info {};
  if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0) {
    // Reading still runs to end of file, so a file that changes size
    // meanwhile is read as it is, not as fstat saw it.
    bytes->reserve(static_cast<size_t>(info.st_size) + kChunk);
  }
  while (true) {
    const size_t old_size = bytes->size();
    bytes->resize(old_size + kChunk);
    const ssize_t n = read(fd, bytes->data() + old_size, kChunk);
    const int error = errno;
    bytes->resize(old_size + (n > 0 ? static_cast<size_t>(n) : 0));
    if (n > 0) continue;
    if (n == 0) return "";
    if (error != EINTR) return "cannot read: " + ErrnoText(error);
  }
}

}  // namespace deepcontext::format
