// The GPU backend's state while it runs: the CUPTI subscription, the
// attribution of activity records, and the callbacks CUPTI calls. Private
// to runtime/cupti: gpu_backend_state.cc starts, flushes and stops it;
// api_callbacks.cc handles the driver API and resource callbacks on
// application threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/cupti/activity_processor.h"
#include "runtime/cupti/backend_lifecycle.h"
#include "runtime/cupti/cuda_driver.h"
#include "runtime/cupti/cupti_detach.h"
#include "runtime/cupti/cupti_functions.h"
#include "runtime/cupti/cupti_loader.h"
#include "runtime/cupti/device_claim.h"
#include "runtime/cupti/driver_api.h"
#include "runtime/gpu/context_sink.h"
#include "runtime/gpu/gpu_attribution.h"
#include "runtime/cupti/graph_launch_tracker.h"
#include "runtime/cupti/gpu_metrics.h"
#include "runtime/cupti/pc_sampling.h"
#include "runtime/gpu/window_detach.h"
#include "runtime/xla/xla_ranges.h"

namespace deepcontext::cupti {

// The NVTX callbacks the backend enables (nvtx_callbacks.cc): XLA's ranges.
extern const CUpti_CallbackId kNvtxCallbacks[];
extern const size_t kNvtxCallbackCount;
// Whether a context is a thread's own node, below no Python frame.
bool IsThreadRootContext(gpu::ContextId context);

// The activity kinds whose bits are set in `bits` (bit i: the i-th kind
// Start() enables, see gpu_backend_state.cc).
TracedActivity TracedFromBits(unsigned bits);

// Everything the running backend owns. Its callbacks run on application
// threads (API and resource callbacks) and on CUPTI's thread (completed
// buffers).
class GpuBackendState {
 public:
  // `sink` must outlive the state.
  GpuBackendState(gpu::ContextSink& sink, const CuptiLibrary& library,
                  std::unique_ptr<CudaDriver> driver)
      : library_(library),
        f_(*library.functions()),
        driver_(std::move(driver)),
        attribution_(sink),
        processor_(attribution_, [this](uint32_t device, gpu::DeviceInfo* info) {
          DeviceAttributes attributes;
          if (!driver_->QueryDevice(device, &attributes)) return false;
          *info = DeviceInfoFromAttributes(attributes);
          return true;
        }),
        graphs_(*driver_),
        xla_ranges_(sink, &IsThreadRootContext),
        pc_sampling_(PcSampling::StartIfAsked(sink, library)),
        gpu_metrics_(GpuMetrics::StartIfAsked(sink, library)) {
    // One process per GPU drives its performance monitors.
    auto uuid = [this](uint32_t ordinal) { return driver_->DeviceUuid(ordinal); };
    if (pc_sampling_ != nullptr) {
      pc_sampling_->SetClaimDevice(ClaimDeviceOf(f_, uuid, "GPU instruction samples",
                                                 gpu::CounterClaims::ForProcess()));
    }
    if (gpu_metrics_ != nullptr) {
      gpu_metrics_->SetClaimDevice(ClaimDeviceOf(f_, uuid, "GPU hardware counters",
                                                 gpu::CounterClaims::ForProcess()));
    }
    // Kernels of child graphs in XLA's command buffers (runtime/xla).
    attribution_.SetGraphKernelResolver(
        [this](uint64_t correlation_id, uint64_t node_id, std::string_view kernel) {
          return xla_ranges_.ResolveGraphKernel(correlation_id, node_id, kernel);
        });
    // Command buffers replayed by other calls than the one that recorded
    // them go under the launching call (runtime/xla/replay_contexts.h).
    attribution_.SetGraphNodePlacer(
        [this](gpu::ContextId node_context, gpu::ContextId launch_context) {
          return xla_ranges_.PlaceReplayed(node_context, launch_context);
        });
  }

  GpuBackendState(const GpuBackendState&) = delete;
  GpuBackendState& operator=(const GpuBackendState&) = delete;
  ~GpuBackendState() {
    Stop();
    Detach();
  }

  // Ok when tracing, otherwise why not (the line the user sees); Stop()
  // cleans up either way. Only from kIdle. On success description() says
  // what is traced.
  Status Start();
  // Ends tracing: waits for every device's GPU work, hands every record to
  // the sink. Metadata() still works afterwards.
  void Stop();
  // After Stop(): detaches CUPTI from the process if DetachRefusal allows
  // (cupti_detach.h). No CUPTI call may follow, since any would attach it
  // again.
  void Detach();
  void Flush();
  // Pauses (false) or resumes (true) tracing between trace windows: the
  // driver callbacks and activity kinds Start() enabled go off and on, and
  // when pauses are long enough CUPTI is detached during them
  // (window_pause.cc).
  void SetTracing(bool on);
  // The shortest pause between trace windows; 0 for none.
  void SetShortestPause(int64_t pause_ns);
  std::vector<std::pair<std::string, std::string>> Metadata() const;
  // What Start() enabled, for the status line.
  const std::string& description() const { return description_; }
  // Where the backend is in its lifecycle (backend_lifecycle.h).
  BackendLifecycle lifecycle() const {
    std::lock_guard<std::mutex> guard(lifecycle_mutex_);
    return lifecycle_;
  }

  // CUPTI entry points (see the functions in the anonymous namespace).
  void OnCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                  const void* data);
  void OnBufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                         size_t valid_size);

  // Callbacks currently running; Stop() waits for them to finish.
  std::atomic<int> in_flight_{0};
  std::atomic<bool> stopping_{false};

 private:
  // Subscribes and enables the callbacks and activity kinds; at Start()
  // with `kinds` and `traced` to describe them, without when attaching
  // again after a pause detached CUPTI. An error says why not; what it left
  // subscribed or enabled is for Stop() or AttachAgain() to undo.
  Status Attach(std::string* kinds, size_t* traced);
  // Pausing: hands the window's completed records over and asks the next
  // traced call to detach CUPTI.
  void AskToDetach();
  // Resuming or stopping: true when CUPTI is still attached, false when a
  // pause detached it (then kDetached, or kEnded when the detach under way
  // did not finish in time; the subscription is gone either way).
  bool EndPause();
  void AttachAgain();
  bool MayDetachNow() const;
  // Whether CUPTI may be called: attached, and no detach asked or under way.
  bool CuptiCallable() const {
    if (CuptiGone()) return false;
    const gpu::WindowDetach::State state = window_detach_.state();
    return state == gpu::WindowDetach::State::kAttached ||
           state == gpu::WindowDetach::State::kQuiet;
  }
  // CUPTI was detached or left to another client: no CUPTI call any more
  // (until attached again, from kDetached).
  bool CuptiGone() const {
    return lifecycle_ == BackendLifecycle::kDetached ||
           lifecycle_ == BackendLifecycle::kEnded ||
           lifecycle_ == BackendLifecycle::kReleased;
  }
  bool Stopped() const {
    return lifecycle_ == BackendLifecycle::kStopped ||
           lifecycle_ == BackendLifecycle::kReleased;
  }
  // The one place lifecycle_ changes; caller holds lifecycle_mutex_.
  void MoveTo(BackendLifecycle next);
  // Whether this backend receives the completed activity buffers.
  bool Active() const;
  void OnCallbackWhilePaused(CUpti_CallbackDomain domain, const void* data);
  // Hands every record over; caller holds lifecycle_mutex_. With
  // `judge_missing`, launches left without records are counted (see
  // GpuAttribution::Flush); not at a window's end, where a call whose exit
  // came after the callbacks went off (a captured or failed launch) was
  // never told apart, and would look like records taken by another client.
  void FlushRecords(bool judge_missing);
  // Turns off the driver and resource callbacks (when subscribed) and every
  // enabled activity kind; true when some kind was on.
  bool TurnCallbacksAndKindsOff();
  // Before the buffer callbacks are registered, at every attach.
  void TellCuptiBuffersAreCleared();
  // CUPTI's timestamp minus CLOCK_REALTIME; only while CuptiCallable().
  std::optional<int64_t> ReadClockOffsetNs() const;
  void OnDriverApi(CUpti_CallbackId cbid, const CUpti_CallbackData& data);
  void OnResource(CUpti_CallbackId cbid, const CUpti_ResourceData& data);
  // Graph instantiation, cloning and destruction, for the samples of graph
  // kernels (--gpu-samples).
  void TrackGraphForSamples(CUpti_CallbackId cbid, const CUpti_ResourceData& data);
  // An instantiation: links the nodes inside its child graphs, which CUPTI
  // never announces, to the source nodes they were made from
  // (graph_child_nodes.h).
  void LinkChildGraphNodes(const CUpti_ResourceData& data);
  void OnNvtx(CUpti_CallbackId cbid, const void* data);
  void HandleNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData& data);
  // What decides whether Stop() detaches CUPTI (see cupti_detach.h).
  DetachInput DetachState() const;
  void WarnIfRecordsMissing();
  TracedActivity Traced() const {
    return TracedFromBits(traced_kinds_.load(std::memory_order_acquire));
  }

  const CuptiLibrary& library_;
  const CuptiFunctions& f_;
  const std::unique_ptr<CudaDriver> driver_;
  gpu::GpuAttribution attribution_;
  ActivityProcessor processor_;
  GraphLaunchTracker graphs_;
  // XLA's NVTX ranges: HLO operations and compilations (runtime/xla).
  xla::XlaRanges xla_ranges_;

  // Indexed by driver callback id; written by Start() before subscribing.
  std::vector<DriverApiClass> api_classes_;
  std::vector<const char*> api_names_;

  // Serializes Start, Flush, SetTracing, Stop and Metadata.
  mutable std::mutex lifecycle_mutex_;
  BackendLifecycle lifecycle_ = BackendLifecycle::kIdle;  // MoveTo() only
  // Non-null while subscribed.
  CUpti_SubscriberHandle subscriber_ = nullptr;
  // The backend held the subscription at some point (no other client did);
  // decides, with the rest of DetachInput, whether stopping detaches.
  bool held_subscription_ = false;
  std::vector<CUpti_ActivityKind> enabled_kinds_;
  std::vector<CUpti_CallbackId> traced_callbacks_;  // driver API
  bool detach_between_windows_ = false;  // SetShortestPause()
  gpu::WindowDetach window_detach_;
  std::string window_error_;  // why GPU tracing ended at a window
  // The GPU clock's offset, taken before each detach: asking CUPTI for a
  // timestamp while detached would attach it again.
  std::optional<int64_t> clock_offset_ns_;
  std::string description_;
  std::string warnings_;
  // Who clears activity buffers before CUPTI fills them (metadata).
  std::string buffers_cleared_by_;
  bool warned_missing_records_ = false;
  // Decided by Stop() (DetachRefusal), done by Detach().
  bool finalize_after_stop_ = false;
  // Whether Stop() could wait for every device's work; -1 before Stop().
  int gpu_idle_at_stop_ = -1;
  std::atomic<uint64_t> dropped_records_{0};
  std::atomic<uint64_t> linked_child_nodes_{0};  // LinkChildGraphNodes()
  // Bit i: kActivityKinds[i] is enabled. All until Start() knows, so that
  // launches during Start() expect records as before.
  std::atomic<unsigned> traced_kinds_{~0u};
  // Instruction sampling (--gpu-samples); null when not asked for.
  const std::unique_ptr<PcSampling> pc_sampling_;
  // Hardware counters per kernel (--gpu-metrics); null when not asked for.
  const std::unique_ptr<GpuMetrics> gpu_metrics_;
};

}  // namespace deepcontext::cupti
