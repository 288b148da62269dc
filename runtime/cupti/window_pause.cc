// Pausing and resuming the GPU backend between trace windows
// (runtime/profiler/trace_windows.h). A pause turns CUPTI's driver
// callbacks and activity kinds off; when pauses are long enough it also
// detaches CUPTI from the process, so that launches between windows cost
// nothing at all (window_detach.h says why and how), and the next window
// attaches it again.
#include <chrono>
#include <cstdio>

#include "runtime/cpu/clocks.h"
#include "runtime/cupti/gpu_backend_state.h"

namespace deepcontext::cupti {
namespace {

// A detach under way takes an application thread's CUDA call; it is waited
// for this long before GPU tracing is given up.
constexpr std::chrono::seconds kDetachTimeout{10};

}  // namespace

void GpuBackendState::SetShortestPause(int64_t pause_ns) {
  std::lock_guard<std::mutex> guard(lifecycle_mutex_);
  detach_between_windows_ = pause_ns >= gpu::kMinDetachedPauseNs;
}

void GpuBackendState::SetTracing(bool on) {
  std::lock_guard<std::mutex> guard(lifecycle_mutex_);
  // Only a tracing backend pauses and only a paused one resumes: before
  // Start, after Stop and once GPU tracing ended at a window (kEnded) this
  // changes nothing.
  if (lifecycle_ != (on ? BackendLifecycle::kPaused : BackendLifecycle::kTracing)) {
    return;
  }
  // Records of work launched between the two steps have no launch; the
  // attribution leaves them out instead of calling them unattributed.
  attribution_.SetWindowed(true);
  if (on) {
    if (!EndPause()) {
      AttachAgain();
      return;
    }
    // Activity before callbacks: every launch seen by a callback then has
    // its records.
    for (CUpti_ActivityKind kind : enabled_kinds_) f_.activity_enable(kind);
    for (CUpti_CallbackId cbid : traced_callbacks_) {
      f_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    }
    window_detach_.Attached();
    MoveTo(BackendLifecycle::kTracing);
    return;
  }
  // Callbacks first, for the same reason. Records of work already launched
  // still arrive after the kinds are disabled.
  f_.enable_domain(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
  for (CUpti_ActivityKind kind : enabled_kinds_) f_.activity_disable(kind);
  MoveTo(BackendLifecycle::kPaused);
  if (MayDetachNow()) AskToDetach();
}

bool GpuBackendState::MayDetachNow() const {
  return detach_between_windows_ && f_.finalize != nullptr &&
         DetachRefusal(DetachState()).empty();
}

void GpuBackendState::AskToDetach() {
  window_detach_.Quiet();
  // No wait for the window's kernels here: CUDA forbids a context
  // synchronization while another thread captures a CUDA graph, in every
  // capture mode, and the capture is lost (on the H200 torch's captures
  // failed in each run that waited). cuptiFinalize at a call's exit waits
  // for the work in flight and hands over the last buffers itself (no
  // record was lost without the wait, and captures stayed valid).
  FlushRecords(/*judge_missing=*/false);
  if (const auto offset = ReadClockOffsetNs()) clock_offset_ns_ = offset;
  // The callbacks come back for one purpose: the exit of the next traced
  // call detaches CUPTI (OnCallbackWhilePaused). They trace nothing.
  for (CUpti_CallbackId cbid : traced_callbacks_) {
    f_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  }
  window_detach_.Ask();
}

bool GpuBackendState::EndPause() {
  switch (window_detach_.EndPause(kDetachTimeout)) {
    case gpu::WindowDetach::Resumed::kStillAttached:
      return true;
    case gpu::WindowDetach::Resumed::kDetached:
      MoveTo(BackendLifecycle::kDetached);
      break;
    case gpu::WindowDetach::Resumed::kStuck:
      // Calling CUPTI while another thread is inside cuptiFinalize could
      // crash the program: GPU tracing ends here.
      window_error_ = "CUPTI took longer than " +
                      std::to_string(kDetachTimeout.count()) +
                      " s to detach between two windows; GPU tracing ended";
      std::fprintf(stderr, "deepcontext: warning: %s\n", window_error_.c_str());
      MoveTo(BackendLifecycle::kEnded);
      break;
  }
  // The subscription died with the detach.
  subscriber_ = nullptr;
  enabled_kinds_.clear();
  return false;
}

void GpuBackendState::AttachAgain() {
  if (lifecycle_ != BackendLifecycle::kDetached) return;  // tracing the GPU has ended
  const int64_t start = cpu::MonotonicNs();
  const Status attached = Attach(nullptr, nullptr);
  window_detach_.RecordAttach(cpu::MonotonicNs() - start);
  if (attached.ok()) {
    window_detach_.Attached();
    MoveTo(BackendLifecycle::kTracing);
    return;
  }
  // Most likely another CUPTI client (torch.profiler, Nsight Systems)
  // subscribed during the pause: leave CUPTI to it.
  window_error_ = "attaching CUPTI again at a trace window failed, GPU "
                  "tracing ended: " + attached.message();
  std::fprintf(stderr, "deepcontext: warning: %s\n", window_error_.c_str());
  TurnCallbacksAndKindsOff();
  if (subscriber_ != nullptr) {
    f_.unsubscribe(subscriber_);
    subscriber_ = nullptr;
  }
  // CUPTI may be attached again by the failed attempt, but another client
  // may use it now: no more calls, no detach at stop.
  MoveTo(BackendLifecycle::kEnded);
}

}  // namespace deepcontext::cupti
