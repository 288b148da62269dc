// The live NVIDIA backend: subscribes to CUPTI, reports GPU API calls
// (kernel launches, copies, memsets, synchronizations, graph launches) with
// the caller's calling context, collects the activity records CUPTI
// produces and feeds both to gpu::GpuAttribution, whose metrics go to the
// gpu::ContextSink its caller supplies (the profiler's MetricStoreSink).
// No vendor headers: CUPTI and the driver are loaded with dlopen at
// Start().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/gpu/context_sink.h"

namespace deepcontext::cupti {

class GpuBackendState;  // gpu_backend_state.h

class GpuBackend {
 public:
  // Loads CUPTI, subscribes to the driver-API launch, copy, memset and
  // synchronization callbacks and to graph-node creation, and enables the
  // kernel, copy, peer copy, memset and synchronization activity kinds.
  // Initializes DLMonitor (released again by Stop()). An error, whose
  // message is the line the user sees, when CUPTI or the NVIDIA driver is
  // missing, when another CUPTI client holds the subscription, or when
  // CUPTI refuses; otherwise the backend, whose description() says what it
  // traces. `make_sink` is called once CUPTI and the driver are found, so
  // that nothing is registered for a backend that cannot run; the backend
  // owns the sink. One backend per process. Never throws.
  using SinkFactory = std::function<std::unique_ptr<gpu::ContextSink>()>;
  static StatusOr<std::unique_ptr<GpuBackend>> Start(const SinkFactory& make_sink);

  GpuBackend(const GpuBackend&) = delete;
  GpuBackend& operator=(const GpuBackend&) = delete;
  // Stops if still running, then detaches CUPTI from the process unless
  // another client uses it (runtime/cupti/cupti_detach.h), so launches
  // after profiling cost what they did before it.
  ~GpuBackend();

  // What Start() turned on (CUPTI's version and path, the activity kinds,
  // the driver functions traced, what it could not trace), for the status
  // line: kept apart from Start()'s errors, which are the other line.
  const std::string& description() const;

  // Forces CUPTI to hand over every record, including those of work still
  // running (such records may lack an end time: synchronize first for
  // exact numbers), and credits everything to the sink. Launches that
  // still have no record after it, with no record for any later launch
  // either, mean another CUPTI client took the activity records: they are
  // counted (metadata gpu_warning) and reported once on stderr. Safe to
  // call repeatedly and after Stop(). Must not be called from inside a CUDA
  // call (CUPTI callback). [any thread]
  void Flush();

  // Pauses (false) or resumes (true) tracing, for trace windows: between
  // windows no launch is intercepted and no activity recorded, so launches
  // cost what they cost without a profiler. Records of the work launched
  // while the switch happens are left out (metadata
  // gpu_records_outside_windows). [any thread, not inside a CUDA call]
  void SetTracing(bool on);
  // The shortest pause between trace windows, before they start. Pauses
  // of at least kMinDetachedPauseNs (window_detach.h) detach CUPTI from the
  // process, so that launches between windows cost nothing; the next
  // window attaches it again (metadata gpu_window_*). [any thread]
  void SetShortestPause(int64_t pause_ns);

  // Profile metadata: CUPTI and driver versions, the GPUs seen
  // ("gpu_devices" and per device "gpu<N>_*": name, compute capability, SMs,
  // busy time, first and last kernel timestamps), record counters (dropped
  // by CUPTI, unattributed, late, via graph nodes) and the GPU clock's
  // offset from CLOCK_REALTIME. [any thread]
  std::vector<std::pair<std::string, std::string>> Metadata() const;

  // Disables the callbacks and activity kinds, waits for the GPU work of
  // the calling thread's current context and of every device's active
  // primary context (so the records of kernels still running are
  // complete), flushes, unsubscribes and releases DLMonitor.
  // Metadata() still answers afterwards. Idempotent.
  void Stop();

 private:
  GpuBackend(std::unique_ptr<gpu::ContextSink> sink,
             std::unique_ptr<GpuBackendState> state);

  std::unique_ptr<gpu::ContextSink> sink_;
  std::unique_ptr<GpuBackendState> state_;  // uses sink_: destroyed first
};

}  // namespace deepcontext::cupti
