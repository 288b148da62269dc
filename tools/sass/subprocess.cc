#include "tools/sass/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

extern char** environ;

namespace deepcontext::sass {
namespace {

// Closes both ends of a pipe when it goes out of scope.
class Pipe {
 public:
  Pipe() {
    if (pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
  }
  ~Pipe() {
    CloseRead();
    CloseWrite();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  bool ok() const { return fds_[0] >= 0; }
  int read_end() const { return fds_[0]; }
  int write_end() const { return fds_[1]; }
  void CloseRead() {
    if (fds_[0] >= 0) close(fds_[0]);
    fds_[0] = -1;
  }
  void CloseWrite() {
    if (fds_[1] >= 0) close(fds_[1]);
    fds_[1] = -1;
  }

 private:
  int fds_[2] = {-1, -1};
};

std::string FirstLine(const std::string& text) {
  const size_t end = text.find('\n');
  return text.substr(0, end);
}

// Reads what is available on `fd` into `out`; false at end of file.
bool Drain(int fd, std::string* out) {
  char buffer[65536];
  const ssize_t n = read(fd, buffer, sizeof(buffer));
  if (n > 0) {
    out->append(buffer, static_cast<size_t>(n));
    return true;
  }
  return n < 0 && (errno == EINTR || errno == EAGAIN);
}

}  // namespace

StatusOr<std::string> RunProgram(const std::vector<std::string>& argv,
                                           const ProgramLimits& limits) {
  if (argv.empty()) return Status::Error("no program to run");
  const std::string& program = argv[0];
  Pipe out_pipe;
  Pipe err_pipe;
  if (!out_pipe.ok() || !err_pipe.ok()) {
    return Status::Error(program + ": cannot create a pipe: " + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe.write_end(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe.write_end(), 2);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return Status::Error(program + ": cannot run: " + std::strerror(spawned));
  }
  out_pipe.CloseWrite();
  err_pipe.CloseWrite();

  std::string output;
  std::string errors;
  bool out_open = true;
  bool err_open = true;
  bool timed_out = false;
  bool too_long = false;
  const auto deadline = std::chrono::steady_clock::now() + limits.timeout;
  while (out_open || err_open) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out_pipe.read_end() : -1, POLLIN, 0},
                     {err_open ? err_pipe.read_end() : -1, POLLIN, 0}};
    const int ready = poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (out_open && fds[0].revents != 0) out_open = Drain(out_pipe.read_end(), &output);
    if (err_open && fds[1].revents != 0) err_open = Drain(err_pipe.read_end(), &errors);
    if (output.size() > limits.max_output_bytes) {
      too_long = true;
      break;
    }
  }
  if (timed_out || too_long) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g", limits.timeout.count() / 1000.0);
    return Status::Error(program + ": killed after " + seconds + " s without finishing");
  }
  if (too_long) {
    return Status::Error(program + ": killed: more than " +
                         std::to_string(limits.max_output_bytes >> 20) + " MiB of output");
  }
  if (WIFSIGNALED(status)) {
    return Status::Error(program + ": killed by signal " + std::to_string(WTERMSIG(status)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string message = program + ": exit status " + std::to_string(WEXITSTATUS(status));
    if (const std::string line = FirstLine(errors); !line.empty()) message += ": " + line;
    return Status::Error(message);
  }
  return output;
}

}  // namespace deepcontext::sass
