// One profiling session of the process: owns the metric store and the
// collectors registered with DLMonitor, plus the metadata written with the
// profile.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "deepcontext/dlmonitor.h"
#include "common/status.h"
#include "runtime/profiler/gpu_source.h"
#include "runtime/profiler/memory_metrics.h"
#include "runtime/profiler/metric_store.h"
#include "runtime/profiler/op_metrics.h"
#include "runtime/profiler/trace_windows.h"

namespace deepcontext::profiler {

class Session {
 public:
  // The process's session object (created on first use, never destroyed).
  static Session& Instance();

  Status Start();
  Status Stop();
  Status Write(const std::string& path);
  void SetMetadata(const std::string& key, const std::string& value);
  void Reset();
  void SetOpCpuTime(OpMetrics::CpuTimeMode mode) {
    op_metrics_.SetCpuTimeMode(mode);
  }
  // Trace in windows covering a fraction of the run (trace_windows.h);
  // fraction 1 traces everything. Takes effect at the next Start(); the
  // metadata describes the windows the session started with.
  Status SetTraceWindows(const TraceWindowOptions& options);
  // How the framework adapter's op interception is paused and resumed
  // between windows (returns 0 on success). nullptr: ops are not paused.
  void SetOpSwitch(int (*op_switch)(int on));
  bool active() const;
  // Active, and not between two trace windows.
  bool tracing() const;
  // What GPU collection does in this session (see deepcontext_gpu_status).
  const char* gpu_status() const { return gpu_status_.c_str(); }

 private:
  Session();
  static void AfterForkInChild();
  std::vector<std::pair<std::string, std::string>> CollectMetadata();
  // `deepcontext run --cpu-counters` (DEEPCONTEXT_CPU_COUNTERS=1): probes
  // the counters and lets the CPU sampler count the usable ones.
  void StartCpuCounters();
  void AddCpuCounterMetadata(
      std::vector<std::pair<std::string, std::string>>& out);
  void AddTraceWindowMetadata(
      std::vector<std::pair<std::string, std::string>>& out) const;
  // The switch the trace windows turn (not under mutex_: Stop() holds it
  // while waiting for the window thread).
  void SetTracing(bool on);

  mutable std::mutex mutex_;  // guards everything below but the store
  MetricStore store_;
  OpMetrics op_metrics_;
  MemoryMetrics memory_metrics_;
  bool active_ = false;
  dlmonitor_callback_handle_t op_callback_ = nullptr;
  dlmonitor_callback_handle_t memory_callback_ = nullptr;
  // GPU collection while active; its last status and metadata stay for the
  // profile after Stop().
  std::unique_ptr<GpuSource> gpu_;
  std::string gpu_status_;
  std::vector<std::pair<std::string, std::string>> gpu_metadata_;
  TraceWindowOptions trace_options_;    // for the next Start()
  TraceWindowOptions windows_options_;  // of the last Start()
  TraceWindows windows_;
  bool cpu_counters_asked_ = false;
  std::string cpu_counters_warning_;  // from the probe, "" when all usable
  std::string cpu_counters_usable_;   // "cycles, instructions, ..."
  std::string windows_error_;  // why they could not run in the last Start()
  std::atomic<int (*)(int)> op_switch_{nullptr};
  std::atomic<bool> tracing_{true};  // false between trace windows
  int64_t start_realtime_ns_ = 0;
  int64_t start_monotonic_ns_ = 0;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace deepcontext::profiler
