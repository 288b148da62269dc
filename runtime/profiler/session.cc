#include "runtime/profiler/session.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "format/dctx_file.h"
#include "runtime/common/command_line.h"
#include "runtime/common/deliberate_leak.h"
#include "runtime/cpu/clocks.h"
#include "runtime/cpu/perf_counters.h"
#include "runtime/native/capture_stats.h"
#include "runtime/native/native_stack.h"
#include "runtime/profiler/profile_builder.h"

#ifndef DEEPCONTEXT_VERSION
#define DEEPCONTEXT_VERSION "0.0.0"
#endif

namespace deepcontext::profiler {
namespace {

std::string HostName() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) return "";
  return host;
}

}  // namespace

Session& Session::Instance() {
  static Session* session = new Session();
  return *session;
}

Session::Session()
    // The sampler's thread accounts for queued allocator events each tick;
    // it starts with the first op, after memory_metrics_ is constructed.
    : op_metrics_(store_, {&MemoryMetrics::DrainOnTick, &memory_metrics_}),
      memory_metrics_(store_) {
  // Prepare handlers run in reverse registration order: the forking thread
  // takes the windows' switch lock before the memory lock, never the other
  // way round. The child's memory handler is AfterForkInChild's ForkChild.
  pthread_atfork([] { Instance().memory_metrics_.ForkPrepare(); },
                 [] { Instance().memory_metrics_.ForkParent(); }, nullptr);
  // Child handlers run in registration order: the switch lock is released
  // before AfterForkInChild turns tracing back on.
  pthread_atfork(&TraceWindows::LockSwitchesBeforeFork,
                 &TraceWindows::UnlockSwitchesAfterFork,
                 &TraceWindows::UnlockSwitchesAfterFork);
  pthread_atfork(nullptr, nullptr, &Session::AfterForkInChild);
}

void Session::SetOpSwitch(int (*op_switch)(int on)) {
  // Under the windows' switch lock, so that a window opening or closing
  // meanwhile cannot leave the adapter in the other state.
  std::lock_guard<std::mutex> guard(TraceWindows::SwitchMutex());
  op_switch_.store(op_switch);
  // An adapter installed between two windows starts paused too.
  if (op_switch != nullptr && !tracing_.load()) op_switch(0);
}

void Session::AfterForkInChild() {
  // The child starts its own profile: the parent's samples stay in the
  // parent's file. Contexts are kept, they are only names.
  Session& session = Instance();
  // CUPTI's threads do not exist in the child and CUDA cannot be used after
  // fork: drop the parent's backend without touching it.
  if (session.gpu_ != nullptr) {
    MarkDeliberatelyLeaked(session.gpu_.release());
    session.gpu_status_ =
        "no GPU activity recorded: GPU profiling is off in forked children";
    session.gpu_metadata_.clear();
  }
  // The child traces everything: its window thread does not exist.
  session.windows_.ResetAfterFork();
  session.windows_options_ = TraceWindowOptions{};
  session.windows_error_.clear();
  session.store_.Clear(dlmonitor_context_count() + 1);
  session.op_metrics_.ResetAfterFork();
  session.memory_metrics_.ForkChild();
  session.start_realtime_ns_ = cpu::RealtimeNs();
  session.start_monotonic_ns_ = cpu::MonotonicNs();
}

Status Session::Start() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (active_) return Status::Error("a profiling session is already active in this process");
  if (dlmonitor_init() != DLMONITOR_OK) return Status::Error("DLMonitor failed to initialize");
  if (dlmonitor_callback_register(DLMONITOR_DOMAIN_FRAMEWORK_OP,
                                  &OpMetrics::OnEvent, &op_metrics_,
                                  &op_callback_) != DLMONITOR_OK) {
    dlmonitor_finalize();
    return Status::Error("cannot register the framework-op callback");
  }
  if (dlmonitor_callback_register(DLMONITOR_DOMAIN_MEMORY,
                                  &MemoryMetrics::OnEvent, &memory_metrics_,
                                  &memory_callback_) != DLMONITOR_OK) {
    dlmonitor_callback_unregister(op_callback_);
    op_callback_ = nullptr;
    dlmonitor_finalize();
    return Status::Error("cannot register the memory callback");
  }
  gpu_ = StartGpuSource(store_, &gpu_status_);
  gpu_metadata_.clear();
  StartCpuCounters();
  active_ = true;
  start_realtime_ns_ = cpu::RealtimeNs();
  start_monotonic_ns_ = cpu::MonotonicNs();
  windows_error_.clear();
  windows_options_ = trace_options_;
  if (windows_options_.fraction < 1.0) {
    const uint64_t seed = static_cast<uint64_t>(start_monotonic_ns_) ^
                          (static_cast<uint64_t>(getpid()) << 32);
    if (gpu_ != nullptr) {
      gpu_->SetShortestPause(PauseSchedule::ShortestPauseNs(windows_options_));
    }
    // On an error tracing stays on for the whole run; the profile says so.
    windows_error_ = windows_.Start(
        windows_options_, [this](bool on) { SetTracing(on); }, seed).message();
  }
  return Status::Ok();
}

Status Session::SetTraceWindows(const TraceWindowOptions& options) {
  if (Status checked = CheckTraceWindowOptions(options); !checked.ok()) return checked;
  std::lock_guard<std::mutex> guard(mutex_);
  trace_options_ = options;  // a running session keeps its windows
  return Status::Ok();
}

void Session::SetTracing(bool on) {
  // Resuming: GPU first, so that the first ops' launches are traced;
  // pausing: ops first, the mirror image.
  if (on && gpu_ != nullptr) gpu_->SetTracing(true);
  tracing_.store(on);
  op_metrics_.SetPaused(!on);
  if (auto* op_switch = op_switch_.load()) {
    op_switch(on ? 1 : 0);
  }
  if (!on && gpu_ != nullptr) gpu_->SetTracing(false);
}

Status Session::Stop() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (!active_) return Status::Error("no profiling session is active");
  // Tracing back on before the GPU backend waits for its last records.
  windows_.Stop();
  if (gpu_ != nullptr) {
    gpu_->Stop();
    gpu_metadata_ = gpu_->Metadata();
    gpu_.reset();
  }
  dlmonitor_callback_unregister(op_callback_);
  op_callback_ = nullptr;
  op_metrics_.StopSampling();
  op_metrics_.Flush();
  dlmonitor_callback_unregister(memory_callback_);
  memory_callback_ = nullptr;
  dlmonitor_finalize();
  active_ = false;
  return Status::Ok();
}

bool Session::active() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return active_;
}

bool Session::tracing() const { return active() && tracing_.load(); }

void Session::Reset() {
  std::lock_guard<std::mutex> guard(mutex_);
  // Ops finished before the reset are cleared with the rest.
  op_metrics_.Flush();
  store_.Clear(dlmonitor_context_count() + 1);
  memory_metrics_.ResetPeaks();
  windows_.ResetStats();
  start_realtime_ns_ = cpu::RealtimeNs();
  start_monotonic_ns_ = cpu::MonotonicNs();
}

void Session::SetMetadata(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> guard(mutex_);
  for (auto& entry : metadata_) {
    if (entry.first == key) {
      entry.second = value;
      return;
    }
  }
  metadata_.emplace_back(key, value);
}

std::vector<std::pair<std::string, std::string>> Session::CollectMetadata() {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&out](const std::string& key, const std::string& value) {
    out.emplace_back(key, value);
  };
  const int64_t now_monotonic = cpu::MonotonicNs();
  add("runtime_version", DEEPCONTEXT_VERSION);
  add("dlmonitor", dlmonitor_describe());
  // Whether native frames unwound with cached .eh_frame rules needed libgcc.
  const native::CfiUnwindStats unwind = native::CfiUnwindStatistics();
  if (unwind.rules_cached > 0) {
    add("native_unwind", "cfi-cache: " + std::to_string(unwind.rules_cached) +
                             " return addresses, " +
                             std::to_string(unwind.libgcc_fallbacks) +
                             " captures unwound by libgcc");
  }
  // Asked for by DEEPCONTEXT_NATIVE_STATS=1: where --native's time went.
  if (std::string captures = native::CaptureStatsLine(); !captures.empty()) {
    std::fprintf(stderr, "deepcontext: native_capture_stats %s\n", captures.c_str());
    add("native_capture_stats", captures);
  }
  add("command_line", ThisCommandLine());
  add("host", HostName());
  add("pid", std::to_string(getpid()));
  add("ppid", std::to_string(getppid()));
  if (const char* rank = std::getenv("RANK")) add("rank", rank);
  add("start_time_ns", std::to_string(start_realtime_ns_));
  add("end_time_ns", std::to_string(start_realtime_ns_ +
                                     (now_monotonic - start_monotonic_ns_)));
  add("duration_ns", std::to_string(now_monotonic - start_monotonic_ns_));
  switch (op_metrics_.cpu_time_mode()) {
    case OpMetrics::CpuTimeMode::kExact:
      add("op_cpu_time", "on");
      break;
    case OpMetrics::CpuTimeMode::kOff:
      add("op_cpu_time", "off");
      break;
    case OpMetrics::CpuTimeMode::kSampled:
      add("op_cpu_time",
          "sampled every " +
              std::to_string(op_metrics_.sampling_interval_ns() / 1000) + " us");
      break;
  }
  {
    // Which clock timed the ops: the counter's rate was calibrated once, so
    // a profile that reads oddly can be told apart.
    const cpu::TscClock& clock = op_metrics_.wall_clock();
    char text[96];
    if (clock.uses_counter()) {
      std::snprintf(text, sizeof(text), "%s, %.6f ns per tick", cpu::TscClock::kCounterName,
                    clock.ns_per_tick());
    } else {
      std::snprintf(text, sizeof(text), "CLOCK_MONOTONIC");
    }
    add("op_wall_clock", text);
  }
  AddCpuCounterMetadata(out);
  AddTraceWindowMetadata(out);
  if (!gpu_status_.empty()) add("gpu", gpu_status_);
  for (const auto& [key, value] :
       gpu_ != nullptr ? gpu_->Metadata() : gpu_metadata_) {
    add(key, value);
  }
  for (const auto& [key, value] : memory_metrics_.Metadata()) add(key, value);
  // Values set by the host (python_version, torch_version, ...) override
  // the automatic ones.
  for (const auto& [key, value] : metadata_) {
    bool replaced = false;
    for (auto& entry : out) {
      if (entry.first == key) {
        entry.second = value;
        replaced = true;
      }
    }
    if (!replaced) add(key, value);
  }
  return out;
}

void Session::StartCpuCounters() {
  const char* flag = std::getenv("DEEPCONTEXT_CPU_COUNTERS");
  cpu_counters_asked_ = flag != nullptr && std::string(flag) == "1";
  // A session after one that counted counts only when asked again.
  op_metrics_.sampler().DisableCounters();
  if (!cpu_counters_asked_) return;
  const cpu::CounterProbe probe =
      cpu::Probe(cpu::KernelPerfSyscalls(), cpu::DefaultCounterEvents());
  cpu_counters_warning_ = probe.warning;
  cpu_counters_usable_.clear();
  for (const cpu::CounterEvent& event : probe.usable) {
    if (!cpu_counters_usable_.empty()) cpu_counters_usable_ += ", ";
    cpu_counters_usable_ += event.label;
  }
  if (!probe.usable.empty()) {
    op_metrics_.sampler().EnableCounters(probe.usable, cpu::KernelPerfSyscalls());
  }
}

void Session::AddCpuCounterMetadata(
    std::vector<std::pair<std::string, std::string>>& out) {
  if (!cpu_counters_asked_) return;
  // One line each: the report shows warning_* entries as warnings.
  if (!cpu_counters_warning_.empty()) {
    out.emplace_back("warning_cpu_counters", cpu_counters_warning_);
  }
  if (cpu_counters_usable_.empty()) {
    out.emplace_back("cpu_counters", "off");
    return;
  }
  CpuSampler& sampler = op_metrics_.sampler();
  if (op_metrics_.cpu_time_mode() != OpMetrics::CpuTimeMode::kSampled) {
    out.emplace_back("warning_cpu_counters",
                     "CPU counters not recorded: they are read with the CPU "
                     "time samples, and this run did not sample CPU time");
  }
  out.emplace_back("cpu_counters", cpu_counters_usable_ +
                                       " (user space, per thread, read every " +
                                       std::to_string(sampler.interval_ns() / 1000) +
                                       " us)");
  out.emplace_back("cpu_counter_threads",
                   std::to_string(sampler.counted_threads()));
  std::string error;
  if (const uint64_t failed = sampler.counter_failures(&error); failed > 0) {
    out.emplace_back("warning_cpu_counter_threads",
                     std::to_string(failed) +
                         " threads not counted (CPU time only): " + error);
  }
}

void Session::AddTraceWindowMetadata(
    std::vector<std::pair<std::string, std::string>>& out) const {
  if (!windows_error_.empty()) {
    out.emplace_back("trace_windows", "off: " + windows_error_);
    return;
  }
  if (windows_options_.fraction >= 1.0) return;  // no windows
  const TraceWindows::Stats stats = windows_.stats();
  const double share = stats.elapsed_ns > 0
                           ? static_cast<double>(stats.traced_ns) /
                                 static_cast<double>(stats.elapsed_ns)
                           : 1.0;
  char text[200];
  std::snprintf(text, sizeof(text),
                "%.1f%% of the run (%g asked), %llu windows of %lld ms",
                100.0 * share, windows_options_.fraction,
                static_cast<unsigned long long>(stats.windows),
                static_cast<long long>(windows_options_.window_ns / 1000000));
  out.emplace_back("trace_windows", text);
  std::snprintf(text, sizeof(text), "%g", windows_options_.fraction);
  out.emplace_back("trace_fraction", text);
  out.emplace_back("trace_window_ns", std::to_string(windows_options_.window_ns));
  out.emplace_back("traced_ns", std::to_string(stats.traced_ns));
  out.emplace_back("trace_window_count", std::to_string(stats.windows));
  out.emplace_back("trace_switch_max_us",
                   std::to_string(stats.max_switch_ns / 1000));
}

Status Session::Write(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> metadata;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    // Records of GPU work finished so far reach the store before it is read.
    if (gpu_ != nullptr) gpu_->Flush();
    memory_metrics_.Publish();
    metadata = CollectMetadata();
  }
  // CPU used since the sampler's last tick, and the ops finished since,
  // reach the store first.
  op_metrics_.SampleNow();
  op_metrics_.Flush();
  return WriteProfile(store_, metadata, path);
}

}  // namespace deepcontext::profiler
