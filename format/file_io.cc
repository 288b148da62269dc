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
  const std::string suffix =
      "." + std::to_string(getpid()) + "." + std::to_string(counter) + ".tmp";
  const size_t slash = path.rfind('/');
  const size_t name_start = slash == std::string::npos ? 0 : slash + 1;
  std::string temp = path;
  if (path.size() - name_start + suffix.size() > kMaxNameBytes) {
    temp.resize(name_start + kMaxNameBytes - suffix.size());
  }
  return temp + suffix;
}

}  // namespace

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) close(fd_);
  if (!temp_.empty()) unlink(temp_.c_str());
}

Status AtomicFile::Create(const std::string& path) {
  path_ = path;
  std::string temp;
  int error = 0;
  for (int attempt = 0; attempt < kMaxCreateAttempts && fd_ < 0; ++attempt) {
    temp = TemporaryName(path, temp_counter.fetch_add(1));
    fd_ = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    error = errno;
    if (fd_ < 0 && error != EEXIST) break;
  }
  if (fd_ < 0) {
    return Status::Error("cannot create temporary file " + temp + ": " +
                         ErrnoText(error));
  }
  temp_ = std::move(temp);
  return Status::Ok();
}

Status AtomicFile::Append(std::string_view bytes) {
  if (!WriteAll(fd_, bytes)) {
    return Status::Error("cannot write " + temp_ + ": " + ErrnoText(errno));
  }
  return Status::Ok();
}

Status AtomicFile::WriteAt(uint64_t offset, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n =
        pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n == 0 ? EIO : errno;
      return Status::Error("cannot write " + temp_ + ": " + ErrnoText(error));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status AtomicFile::Commit() {
  const char* step = nullptr;
  int error = 0;
  if (fsync(fd_) != 0) {
    step = "cannot sync ";
    error = errno;
  }
  // close() reports delayed write errors (NFS, quotas), so it is checked too.
  const int closed = close(fd_);
  fd_ = -1;
  if (closed != 0 && step == nullptr) {
    step = "cannot close ";
    error = errno;
  }
  if (step == nullptr && rename(temp_.c_str(), path_.c_str()) != 0) {
    step = "cannot rename ";
    error = errno;
  }
  if (step != nullptr)
    return Status::Error(step + temp_ + ": " + ErrnoText(error));
  temp_.clear();  // renamed: nothing left to remove
  try {
    SyncDirectory(DirectoryOf(path_));
  } catch (const std::bad_alloc&) {
    // The file is complete and in place; only its durability is unconfirmed.
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  AtomicFile file;
  Status status = file.Create(path);
  if (status.ok()) status = file.Append(bytes);
  if (status.ok()) status = file.Commit();
  return status;
}

StatusOr<std::string> ReadWholeFile(const std::string& path, size_t max_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::Error("cannot open: " + ErrnoText(errno));
  FdCloser closer(fd);
  struct stat info {};
  if (fstat(fd, &info) != 0)
    return Status::Error("cannot stat: " + ErrnoText(errno));
  // Devices, pipes and directories have no size to check the read against:
  // /dev/zero would be read forever and a FIFO could block it.
  if (S_ISDIR(info.st_mode))
    return Status::Error("is a directory, not a profile file");
  if (!S_ISREG(info.st_mode)) return Status::Error("not a regular file");
  const auto size = static_cast<uint64_t>(info.st_size);
  if (size > max_bytes) {
    return Status::Error(
        "file of " + std::to_string(size) +
        " bytes is larger than any profile this reader accepts (" +
        std::to_string(max_bytes) + " bytes)");
  }
  // One byte more than fstat said, so a file that grows meanwhile shows up
  // as a size mismatch below instead of being cut silently.
  std::string bytes(static_cast<size_t>(size) + 1, '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Error("cannot read: " + ErrnoText(errno));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  if (done != size) return Status::Error("file changed size while being read");
  bytes.resize(done);
  return bytes;
}

}  // namespace deepcontext::format
