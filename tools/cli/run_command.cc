#include "tools/cli/run_command.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "tools/cli/install_layout.h"

namespace deepcontext::cli {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string output;
  bool quiet = false;
  bool native = false;
  bool no_cpu_time = false;
  bool sampled_cpu_time = false;
  bool exact_cpu_time = false;
  bool no_gpu_memory = false;
  double trace_fraction = 1.0;
  double trace_window_ms = 50;
  // Unset: the runtime's default (2M); read by the runtime itself.
  std::optional<uint64_t> max_contexts;
  std::vector<std::string> command;
};

volatile sig_atomic_t g_child_pid = 0;

void ForwardSignal(int signal_number) {
  if (g_child_pid > 0) kill(g_child_pid, signal_number);
}

std::string FormatNumber(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

// "python3 -m pkg" -> "pkg", "python3 train.py" -> "train", "./prog" -> "prog".
std::string DefaultStem(const std::vector<std::string>& command) {
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& arg = command[i];
    if (arg == "-m" && i + 1 < command.size()) return command[i + 1];
    if (arg == "-c") return "python";
    if (!arg.empty() && arg[0] != '-') return fs::path(arg).stem().string();
  }
  return fs::path(command[0]).stem().string();
}

std::string OutputPath(const RunOptions& options) {
  std::string output = options.output;
  if (output.empty()) output = DefaultStem(options.command) + ".dctx";
  std::error_code ec;
  fs::path absolute = fs::absolute(output, ec);
  return ec ? output : absolute.lexically_normal().string();
}

// Profiles written by this run: the root file plus <stem>.*.dctx files
// modified since the run started.
std::vector<std::string> WrittenProfiles(const std::string& output,
                                         fs::file_time_type started) {
  std::vector<std::string> found;
  fs::path root(output);
  std::string stem = root.filename().string();
  if (stem.size() > 5 && stem.ends_with(".dctx")) stem.resize(stem.size() - 5);
  std::error_code ec;
  if (fs::exists(root, ec) && fs::last_write_time(root, ec) >= started) {
    found.push_back(root.string());
  }
  for (const auto& entry : fs::directory_iterator(root.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.path() == root || !name.starts_with(stem + ".") ||
        !name.ends_with(".dctx")) {
      continue;
    }
    if (fs::last_write_time(entry.path(), ec) >= started) {
      found.push_back(entry.path().string());
    }
  }
  return found;
}

[[noreturn]] void ExecChild(const RunOptions& options,
                            const InstallLayout& layout,
                            const std::string& output) {
  std::string python_path = layout.bootstrap_dir + ":" + layout.python_dir;
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) {
    python_path += std::string(":") + old;
  }
  setenv("PYTHONPATH", python_path.c_str(), 1);
  setenv("DEEPCONTEXT_OUTPUT", output.c_str(), 1);
  setenv("DEEPCONTEXT_ROOT_PID", std::to_string(getpid()).c_str(), 1);
  setenv("DEEPCONTEXT_HOME", layout.prefix.c_str(), 1);
  // Read by the launcher (python/deepcontext/_launch.py) of every process.
  if (options.native) {
    setenv("DEEPCONTEXT_NATIVE", "1", 1);
  } else {
    unsetenv("DEEPCONTEXT_NATIVE");
  }
  if (options.no_cpu_time) {
    setenv("DEEPCONTEXT_CPU_TIME", "off", 1);
  } else if (options.exact_cpu_time) {
    setenv("DEEPCONTEXT_CPU_TIME", "exact", 1);
  } else if (options.sampled_cpu_time) {
    setenv("DEEPCONTEXT_CPU_TIME", "sampled", 1);
  } else {
    unsetenv("DEEPCONTEXT_CPU_TIME");
  }
  if (options.no_gpu_memory) {
    setenv("DEEPCONTEXT_GPU_MEMORY", "0", 1);
  } else {
    unsetenv("DEEPCONTEXT_GPU_MEMORY");
  }
  if (options.trace_fraction < 1.0) {
    setenv("DEEPCONTEXT_TRACE_FRACTION",
           FormatNumber(options.trace_fraction).c_str(), 1);
    setenv("DEEPCONTEXT_TRACE_WINDOW_MS",
           FormatNumber(options.trace_window_ms).c_str(), 1);
  } else {
    unsetenv("DEEPCONTEXT_TRACE_FRACTION");
    unsetenv("DEEPCONTEXT_TRACE_WINDOW_MS");
  }
  if (options.max_contexts) {
    setenv("DEEPCONTEXT_MAX_CONTEXTS",
           std::to_string(*options.max_contexts).c_str(), 1);
  }
  std::vector<char*> argv;
  for (const std::string& arg : options.command) {
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  const int error = errno;
  std::cerr << "deepcontext: cannot run '" << options.command[0]
            << "': " << std::strerror(error) << "\n";
  _exit(error == ENOENT ? 127 : 126);
}

int Run(const RunOptions& options) {
  if (options.command.empty()) {
    std::cerr << "deepcontext run: no command given; usage: deepcontext run "
                 "[-o out.dctx] -- python3 script.py [args...]\n";
    return 2;
  }
  InstallLayout layout;
  std::string error;
  if (!FindInstallLayout(&layout, &error)) {
    std::cerr << "deepcontext: " << error << "\n";
    return 2;
  }
  const std::string output = OutputPath(options);
  std::error_code ec;
  const fs::path directory = fs::path(output).parent_path();
  if (!fs::is_directory(directory, ec) ||
      access(directory.c_str(), W_OK) != 0) {
    std::cerr << "deepcontext: cannot write profiles to " << directory.string()
              << ": " << (ec ? ec.message() : std::strerror(errno)) << "\n";
    return 2;
  }

  // Give the file clock a margin: modification times are coarser than
  // now() on some filesystems.
  const fs::file_time_type started =
      fs::file_time_type::clock::now() - std::chrono::seconds(1);
  std::cout.flush();
  std::cerr.flush();
  const pid_t child = fork();
  if (child < 0) {
    std::cerr << "deepcontext: fork failed: " << std::strerror(errno) << "\n";
    return 2;
  }
  if (child == 0) ExecChild(options, layout, output);

  // The terminal delivers SIGINT/SIGQUIT to the whole foreground group, so
  // the child gets them directly; we only forward signals sent to us alone.
  g_child_pid = child;
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  for (int sig : {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) {
    struct sigaction action {};
    action.sa_handler = &ForwardSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(sig, &action, nullptr);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }

  if (!options.quiet) {
    const std::vector<std::string> written = WrittenProfiles(output, started);
    if (written.empty()) {
      std::cerr << "deepcontext: no profile was written (was the command a "
                   "Python program? Python's -I and -E options disable "
                   "profiling)\n";
    } else {
      std::cerr << "deepcontext: wrote " << written.size() << " profile"
                << (written.size() > 1 ? "s" : "") << ":";
      for (const std::string& path : written) std::cerr << " " << path;
      std::cerr << "\n";
    }
  }
  if (WIFSIGNALED(status)) {
    // Die of the same signal so callers see what they would have seen.
    const int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    kill(getpid(), sig);
    return 128 + sig;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

void AddRunCommand(CLI::App& app, std::function<int()>& action) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand(
      "run", "Run a program and profile every Python process it starts");
  run->add_option("-o,--output", options->output,
                  "Profile file of the launched process (default: "
                  "<script>.dctx); other processes write "
                  "<stem>[.rank<R>].<pid>.dctx beside it");
  run->add_flag("-q,--quiet", options->quiet,
                "Do not list the written profiles at the end");
  run->add_flag("--native", options->native,
                "Also record native (C/C++) frames between Python lines and "
                "the ops they call");
  auto* no_cpu = run->add_flag(
      "--no-cpu-time", options->no_cpu_time,
      "Time ops by wall time only: no thread CPU time and no sampling "
      "thread");
  auto* sampled = run->add_flag(
      "--sampled-cpu-time", options->sampled_cpu_time,
      "The default: sample thread CPU time every millisecond and charge it "
      "to the op running then (no system call per op; CPU outside ops goes "
      "to the thread)");
  run->add_flag("--exact-cpu-time", options->exact_cpu_time,
                "Read thread CPU time at every op's entry and exit: exact for "
                "every op, at two system calls per op")
      ->excludes(no_cpu)
      ->excludes(sampled);
  sampled->excludes(no_cpu);
  run->add_flag("--no-gpu-memory", options->no_gpu_memory,
                "Do not hook the CUDA caching allocator (no gpu_alloc_bytes or "
                "gpu_peak_live_bytes; saves a callback per allocation and free)");
  run->add_option("--trace-fraction", options->trace_fraction,
                  "Trace ops and GPU work in windows covering this share of "
                  "the run (0.001 to 1; default 1, everything). Between "
                  "windows they cost what they cost without a profiler; the "
                  "profile describes the windows")
      ->check(CLI::Range(0.001, 1.0));
  run->add_option("--trace-window-ms", options->trace_window_ms,
                  "Length of one trace window with --trace-fraction, in "
                  "milliseconds (1 to 60000; default 50). Windows start at "
                  "random times")
      ->check(CLI::Range(1.0, 60000.0));
  run->add_option("--max-contexts", options->max_contexts,
                  "Distinct calling contexts to keep (default 2000000); "
                  "new call paths past it are folded into marked "
                  "'[other: paths beyond the context limit]' nodes; 0 keeps "
                  "every one")
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            // Unsigned conversion would wrap "-3" around to 2^64 - 3.
            if (text.find_first_not_of("0123456789") == std::string::npos) {
              return "";
            }
            return "must be a whole number of contexts, 0 or more, not '" +
                   text + "'";
          },
          "", ""));
  run->add_option("command", options->command,
                  "The program and its arguments (put them after --)")
      ->required();
  run->prefix_command();
  run->callback([options, &action] {
    action = [options] { return Run(*options); };
  });
}

}  // namespace deepcontext::cli
