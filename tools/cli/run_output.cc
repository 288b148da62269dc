#include "tools/cli/run_output.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace deepcontext::cli {
namespace {

namespace fs = std::filesystem;

// A temporary name shortened to fit 255 bytes (format/file_io.cc) keeps at
// least this many bytes of the profile's name.
constexpr size_t kMinTemporaryPrefix = 200;

bool AllDigits(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// The writer pid of "<name>.<pid>.<n>.tmp", with <name> in *name; 0 when
// the file name is not such a temporary.
pid_t TemporaryWriter(const std::string& file_name, std::string* name) {
  if (!file_name.ends_with(".tmp")) return 0;
  const std::string rest = file_name.substr(0, file_name.size() - 4);
  const size_t counter_dot = rest.rfind('.');
  if (counter_dot == std::string::npos || counter_dot == 0) return 0;
  const size_t pid_dot = rest.rfind('.', counter_dot - 1);
  if (pid_dot == std::string::npos) return 0;
  const std::string pid = rest.substr(pid_dot + 1, counter_dot - pid_dot - 1);
  if (!AllDigits(rest.substr(counter_dot + 1)) || !AllDigits(pid) ||
      pid.size() > 9) {
    return 0;
  }
  *name = rest.substr(0, pid_dot);
  return static_cast<pid_t>(std::stol(pid));
}

// <name> is the output's file name or <stem>.<...> (the files of other
// processes), or a prefix of either when the temporary name was shortened.
bool BelongsToOutput(const std::string& name, const std::string& file_name,
                     const std::string& stem) {
  return name == file_name || name.starts_with(stem + ".") ||
         (name.size() >= kMinTemporaryPrefix &&
          (file_name.starts_with(name) || stem.starts_with(name)));
}

bool IsRunning(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

std::string ResolveOutputPath(const std::string& requested,
                              const std::string& default_stem) {
  const std::string output =
      requested.empty() ? default_stem + ".dctx" : requested;
  std::error_code ec;
  fs::path absolute = fs::absolute(output, ec);
  return ec ? output : absolute.lexically_normal().string();
}

std::string OutputStem(const std::string& output) {
  std::string stem = fs::path(output).filename().string();
  if (stem.size() > 5 && stem.ends_with(".dctx")) stem.resize(stem.size() - 5);
  return stem;
}

Status CheckOutputPath(const std::string& output) {
  const fs::path path(output);
  const std::string name = path.filename().string();
  if (name.empty() || name == "." || name == "..") {
    return Status::Error("-o " + output + " names a directory; name a file, "
                         "e.g. -o " + (path / "run.dctx").string());
  }
  struct stat info {};
  if (stat(output.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) {
      return Status::Error("-o " + output + " is a directory; name a file, "
                           "e.g. -o " + (path / "run.dctx").string());
    }
    if (!S_ISREG(info.st_mode)) {
      return Status::Error("-o " + output +
                           " is not a regular file (a device, pipe or "
                           "socket); profiles are written to regular files "
                           "only");
    }
  }
  if (name.size() > kMaxOutputNameBytes) {
    return Status::Error(
        "the output file name is " + std::to_string(name.size()) +
        " bytes long; at most " + std::to_string(kMaxOutputNameBytes) +
        " are accepted (other processes write <name>.<pid>.dctx beside it, "
        "and a file name has at most 255 bytes)");
  }
  const fs::path directory = path.parent_path();
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) {
    return Status::Error("cannot write profiles to " + directory.string() +
                         ": " + (ec ? ec.message() : "not a directory"));
  }
  if (access(directory.c_str(), W_OK) != 0) {
    return Status::Error("cannot write profiles to " + directory.string() +
                         ": " + std::strerror(errno));
  }
  return Status::Ok();
}

int RemoveStaleTemporaries(const std::string& output) {
  const fs::path root(output);
  const std::string file_name = root.filename().string();
  const std::string stem = OutputStem(output);
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root.parent_path(), ec)) {
    std::string name;
    const pid_t writer =
        TemporaryWriter(entry.path().filename().string(), &name);
    if (writer <= 0 || !BelongsToOutput(name, file_name, stem) ||
        IsRunning(writer)) {
      continue;
    }
    struct stat info {};
    if (lstat(entry.path().c_str(), &info) != 0 || !S_ISREG(info.st_mode) ||
        info.st_uid != getuid()) {
      continue;
    }
    if (unlink(entry.path().c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace deepcontext::cli
