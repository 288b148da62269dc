#include "tools/cli/run_command.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tools/cli/install_layout.h"
#include "tools/cli/run_output.h"
#include "tools/cli/run_registry.h"

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
  bool cpu_counters = false;
  bool gpu_samples = false;
  bool gpu_metrics = false;
  uint32_t gpu_metrics_kernels = 5;
  double trace_fraction = 1.0;
  double trace_window_ms = 50;
  // Unset: the runtime's default (2M); read by the runtime itself.
  std::optional<uint64_t> max_contexts;
  std::vector<std::string> command;
  std::string unknown_option;  // the first argument before the program that
                               // is none of run's options
};

volatile sig_atomic_t g_child_pid = 0;

// How long the launcher waits, after the program ended, for its other
// processes to say whether they wrote their profiles.
constexpr int kStragglerGraceMs = 5000;

void ForwardSignal(int signal_number) {
  if (g_child_pid > 0) kill(g_child_pid, signal_number);
}

// SIGINT and SIGQUIT typed at the terminal reach the program directly (it
// shares our foreground process group; the kernel sends them, SI_KERNEL):
// forwarding them too would interrupt the program twice. Sent by a process
// to our pid alone, they are forwarded.
void ForwardUnlessFromTerminal(int signal_number, siginfo_t* info, void*) {
  if (info != nullptr && info->si_code == SI_KERNEL) return;
  ForwardSignal(signal_number);
}

// With a terminal, the child stays in our process group, so that Ctrl-C
// and job control (Ctrl-Z, fg, bg) reach it as without the profiler.
// Without one (scripts, CI, services), it gets a group of its own, so that
// a signal sent to our group reaches it once, through us, instead of twice.
bool HasTerminal() {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (isatty(fd)) return true;
  }
  return false;
}

// The -- between run's options and the program is optional; what looks
// like an option before the program is one of run's or a mistake.
Status CheckOptions(const RunOptions& options) {
  if (options.command.empty()) {
    return Status::Error("no command given; usage: deepcontext run [-o "
                         "out.dctx] [--] python3 script.py [args...]");
  }
  const std::string& unknown = options.unknown_option.empty()
                                   ? options.command[0]
                                   : options.unknown_option;
  if (unknown.starts_with("-")) {
    return Status::Error("unknown option '" + unknown +
                         "' (see deepcontext run --help; put the program "
                         "after --)");
  }
  return Status::Ok();
}

// Same rule as the runtime (runtime/profiler/op_metrics.cc), checked
// before the program starts instead of a silent fallback there.
Status CheckEnvironment() {
  const char* text = std::getenv("DEEPCONTEXT_CPU_SAMPLE_US");
  if (text == nullptr || text[0] == '\0') return Status::Ok();
  const std::string digits(text);
  if (digits.size() <= 7 &&
      digits.find_first_not_of("0123456789") == std::string::npos) {
    const long us = std::stol(digits);
    if (us >= 10 && us <= 1000000) return Status::Ok();
  }
  return Status::Error(std::string("DEEPCONTEXT_CPU_SAMPLE_US=") + text +
                       " is not a whole number of microseconds from 10 to "
                       "1000000");
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

[[noreturn]] void ExecChild(const RunOptions& options,
                            const InstallLayout& layout,
                            const std::string& output,
                            const std::string& registry, pid_t launcher,
                            bool own_group) {
  // The program follows its launcher: a SIGKILLed `deepcontext run` takes
  // it along (SIGTERM, so that it still writes its profile). Set after the
  // fork, so the launcher may already be gone: checked once it is set.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != launcher) _exit(128 + SIGTERM);
  if (own_group) setpgid(0, 0);
  setenv("DEEPCONTEXT_RUN_SOCKET", registry.c_str(), 1);
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
  // Read by the runtime itself (runtime/profiler/session.cc,
  // runtime/profiler/gpu_source.cc).
  if (options.cpu_counters) {
    setenv("DEEPCONTEXT_CPU_COUNTERS", "1", 1);
  } else {
    unsetenv("DEEPCONTEXT_CPU_COUNTERS");
  }
  if (options.gpu_samples) {
    setenv("DEEPCONTEXT_GPU_SAMPLES", "1", 1);
  } else {
    unsetenv("DEEPCONTEXT_GPU_SAMPLES");
  }
  if (options.gpu_metrics) {
    setenv("DEEPCONTEXT_GPU_METRICS", "1", 1);
    setenv("DEEPCONTEXT_GPU_METRICS_KERNELS",
           std::to_string(options.gpu_metrics_kernels).c_str(), 1);
  } else {
    unsetenv("DEEPCONTEXT_GPU_METRICS");
    unsetenv("DEEPCONTEXT_GPU_METRICS_KERNELS");
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

void ReportProfiles(const RunRegistry& registry, const std::string& output) {
  for (const std::string& problem : registry.Problems()) {
    std::cerr << "deepcontext: warning: " << problem << "\n";
  }
  const std::vector<std::string> written = registry.Written(output);
  if (written.empty()) {
    if (!registry.AnyStarted()) {
      std::cerr << "deepcontext: no profile was written (was the command a "
                   "Python program? Python's -I and -E options disable "
                   "profiling)\n";
    } else {
      std::cerr << "deepcontext: no profile was written\n";
    }
    return;
  }
  std::cerr << "deepcontext: wrote " << written.size() << " profile"
            << (written.size() > 1 ? "s" : "") << ":";
  for (const std::string& path : written) std::cerr << " " << path;
  std::cerr << "\n";
}

void InstallSignalForwarding(pid_t child) {
  g_child_pid = child;
  for (int sig : {SIGINT, SIGQUIT}) {
    struct sigaction action {};
    action.sa_sigaction = &ForwardUnlessFromTerminal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART | SA_SIGINFO;
    sigaction(sig, &action, nullptr);
  }
  for (int sig : {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) {
    struct sigaction action {};
    action.sa_handler = &ForwardSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(sig, &action, nullptr);
  }
}

// Waits for the program, reading what its processes report meanwhile.
int WaitForChild(pid_t child, RunRegistry& registry) {
  int status = 0;
  while (true) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) return status;
    if (done < 0 && errno != EINTR) return status;
    registry.Receive(100);
  }
}

int Run(const RunOptions& options) {
  for (const Status& status : {CheckOptions(options), CheckEnvironment()}) {
    if (!status.ok()) {
      std::cerr << "deepcontext run: " << status.message() << "\n";
      return 2;
    }
  }
  const StatusOr<InstallLayout> found = FindInstallLayout();
  if (!found.ok()) {
    std::cerr << "deepcontext: " << found.status().message() << "\n";
    return 2;
  }
  const InstallLayout& layout = found.value();
  const std::string output =
      ResolveOutputPath(options.output, DefaultStem(options.command));
  if (Status status = CheckOutputPath(output); !status.ok()) {
    std::cerr << "deepcontext: " << status.message() << "\n";
    return 2;
  }
  StatusOr<std::unique_ptr<RunRegistry>> bound = RunRegistry::Bind(output);
  if (!bound.ok()) {
    std::cerr << "deepcontext: " << bound.status().message() << "\n";
    return 2;
  }
  const std::unique_ptr<RunRegistry> registry = std::move(bound).value();
  RemoveStaleTemporaries(output);

  const bool own_group = !HasTerminal();
  const pid_t launcher = getpid();
  std::cout.flush();
  std::cerr.flush();
  const pid_t child = fork();
  if (child < 0) {
    std::cerr << "deepcontext: fork failed: " << std::strerror(errno) << "\n";
    return 2;
  }
  if (child == 0) {
    ExecChild(options, layout, output, registry->name(), launcher, own_group);
  }
  // Both sides set the group, so it exists before any signal is forwarded.
  if (own_group) setpgid(child, child);
  InstallSignalForwarding(child);
  const int status = WaitForChild(child, *registry);
  registry->Ended(child, status);
  registry->AwaitStragglers(kStragglerGraceMs);
  if (!options.quiet) ReportProfiles(*registry, output);
  if (WIFSIGNALED(status)) {
    // Die of the same signal so callers see what they would have seen.
    const int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    kill(getpid(), sig);
    return 128 + sig;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// CLI::Range lets NaN through (every comparison with it is false).
CLI::Validator FiniteRange(double low, double high) {
  return CLI::Validator(
      [low, high](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) {
          return "Value " + text + " is not a number";
        }
        if (!(value >= low && value <= high)) {
          return "Value " + text + " not in range [" + FormatNumber(low) +
                 " - " + FormatNumber(high) + "]";
        }
        return std::string();
      },
      "FLOAT in [" + FormatNumber(low) + " - " + FormatNumber(high) + "]");
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
  auto* exact = run->add_flag("--exact-cpu-time", options->exact_cpu_time,
                "Read thread CPU time at every op's entry and exit: exact for "
                "every op, at two system calls per op");
  exact->excludes(no_cpu)->excludes(sampled);
  sampled->excludes(no_cpu);
  run->add_flag("--cpu-counters", options->cpu_counters,
                "Also count CPU cycles, instructions and cache misses per "
                "thread (perf_event_open, user space) and charge them like "
                "sampled CPU time; where the kernel or VM forbids them the "
                "profile says so in a warning")
      ->excludes(no_cpu)
      ->excludes(exact);
  auto* gpu_samples = run->add_flag("--gpu-samples", options->gpu_samples,
                "Sample the instructions of GPU kernels with their stall "
                "reasons (CUPTI PC sampling): child nodes of each kernel per "
                "instruction. Kernels of one context run one at a time while "
                "sampling (DEEPCONTEXT_GPU_SAMPLE_PERIOD=5..31 sets the period "
                "to 2^N cycles). Kernels replayed from CUDA graphs are sampled "
                "on the line that captured them");
  auto* gpu_metrics = run->add_flag("--gpu-metrics", options->gpu_metrics,
                "Measure hardware counters of GPU kernels (CUPTI range "
                "profiler): achieved occupancy, SM, DRAM and tensor-pipe "
                "throughput %, on each kernel node. Each measured launch is "
                "serialized and replayed once per counter pass, so only the "
                "first --gpu-metrics-kernels launches per kernel and calling "
                "context are measured");
  auto* gpu_metrics_kernels = run->add_option(
                "--gpu-metrics-kernels", options->gpu_metrics_kernels,
                "With --gpu-metrics: launches measured per kernel and calling "
                "context (1 to 1000000; default 5); later ones run unmeasured")
      ->check(CLI::Range(1u, 1000000u));
  gpu_metrics_kernels->needs(gpu_metrics);
  // Both drive the GPU's performance monitors: one at a time.
  gpu_metrics->excludes(gpu_samples);
  run->add_flag("--no-gpu-memory", options->no_gpu_memory,
                "Do not hook the CUDA caching allocator (no gpu_alloc_bytes or "
                "gpu_peak_live_bytes; saves a callback per allocation and free)");
  auto* fraction = run->add_option("--trace-fraction", options->trace_fraction,
                  "Trace ops and GPU work in windows covering this share of "
                  "the run (0.001 to 1; default 1, everything). Between "
                  "windows they cost what they cost without a profiler; the "
                  "profile describes the windows")
      ->check(FiniteRange(0.001, 1.0));
  // Detaching CUPTI between windows would drop the sampling configuration.
  gpu_samples->excludes(fraction);
  gpu_metrics->excludes(fraction);
  run->add_option("--trace-window-ms", options->trace_window_ms,
                  "Length of one trace window with --trace-fraction, in "
                  "milliseconds (1 to 60000; default 50). Windows start at "
                  "random times")
      ->check(FiniteRange(1.0, 60000.0));
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
  // The program and its arguments: everything from the first argument that
  // is not one of run's options (a -- before it is optional) is passed on
  // untouched, so the program's own options are never taken for run's.
  run->add_option("command", options->command,
                  "The program and its arguments; everything from the "
                  "program on is passed to it (a -- before it is optional)");
  run->prefix_command();
  run->positionals_at_end();
  run->footer("Usage: deepcontext run [OPTIONS] [--] PROGRAM [ARGS...]");
  run->callback([options, run, &action] {
    // What CLI11 leaves over before the program: an unknown option of run
    // (a "--" separator is left over too and means nothing).
    for (const std::string& extra : run->remaining()) {
      if (extra != "--") {
        options->unknown_option = extra;
        break;
      }
    }
    action = [options] { return Run(*options); };
  });
}

}  // namespace deepcontext::cli
