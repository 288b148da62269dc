#include "runtime/cupti/gpu_backend_state.h"

#include <array>
#include <cassert>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <thread>

#include "deepcontext/dlmonitor.h"
#include "runtime/common/hot_path.h"
#include "runtime/cpu/clocks.h"
#include "runtime/cupti/activity_buffer_pool.h"
#include "runtime/cupti/cupti_copies.h"
#include "runtime/cupti/cupti_detach.h"
#include "runtime/cupti/gpu_metadata.h"
#include "runtime/cupti/nvtx_injection.h"
#include "runtime/gpu/buffer_worker.h"

namespace deepcontext::cupti {
namespace {

constexpr char kSubscriberName[] = "DeepContext";
// Every reason Start() gives begins with it: the status line and the
// profile's "gpu" metadata say first that the profile has no GPU activity.
constexpr char kNotRecorded[] = "no GPU activity recorded: ";
constexpr char kAnotherClient[] =
    "another CUPTI client (torch.profiler, Nsight Systems, ...) is active";

struct ActivityKindName {
  CUpti_ActivityKind kind;
  const char* name;
  bool TracedActivity::*traced;
};
constexpr ActivityKindName kActivityKinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernels", &TracedActivity::kernels},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "copies", &TracedActivity::copies},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, "peer copies", &TracedActivity::peer_copies},
    {CUPTI_ACTIVITY_KIND_MEMSET, "memsets", &TracedActivity::memsets},
};
// Synchronizations are not taken from CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
// enabling it makes CUPTI wrap every driver call, traced or not, which
// multiplies the cost of the cheap calls frameworks make around each
// launch (cuCtxGetDevice: 0.011 -> 0.100 us on the H200,
// bench/gpu_launch_cost.cc). The driver callbacks time them instead
// (api_callbacks.cc), so TracedActivity::syncs stays set.

// Activity buffers outlive every backend: CUPTI may hand one back late.
ActivityBufferPool& BufferPool() {
  static auto* pool = new ActivityBufferPool();
  return *pool;
}

// CUPTI's activity callbacks carry no user data, so the running backend is
// found here. Processing a buffer holds the mutex; Stop() clears the
// pointer under it, so no buffer is processed by a backend being destroyed.
std::mutex& ActiveMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}
GpuBackendState* g_active = nullptr;  // guarded by ActiveMutex()

// Gives a completed buffer to the running backend, if any, and takes it
// back into the pool.
void HandleCompleted(const gpu::CompletedBuffer& buffer) {
  {
    std::lock_guard<std::mutex> guard(ActiveMutex());
    if (g_active != nullptr) {
      g_active->OnBufferCompleted(static_cast<CUcontext>(buffer.context),
                                  buffer.stream_id, buffer.data,
                                  buffer.valid_size);
    }
  }
  BufferPool().Release(buffer.data);
}

// Completed buffers are processed here, off the application threads that
// CUPTI hands them back on (see buffer_worker.h). Like the pool, it outlives
// every backend.
gpu::BufferWorker& Worker() {
  static auto* worker = new gpu::BufferWorker(&HandleCompleted);
  return *worker;
}

void CUPTIAPI CuptiCallback(void* userdata, CUpti_CallbackDomain domain,
                              CUpti_CallbackId cbid, const void* data);
void CUPTIAPI RequestBuffer(uint8_t** buffer, size_t* size,
                                size_t* max_records);
void CUPTIAPI CompleteBuffer(CUcontext context, uint32_t stream_id,
                                uint8_t* buffer, size_t size, size_t valid_size);

}  // namespace

TracedActivity TracedFromBits(unsigned bits) {
  // Every launch asks: one table lookup instead of a loop per call.
  constexpr size_t kCombinations = size_t{1} << std::size(kActivityKinds);
  static const std::array<TracedActivity, kCombinations> table = [] {
    std::array<TracedActivity, kCombinations> out{};
    for (size_t combination = 0; combination < kCombinations; ++combination) {
      for (size_t i = 0; i < std::size(kActivityKinds); ++i) {
        out[combination].*kActivityKinds[i].traced = (combination >> i & 1u) != 0;
      }
    }
    return out;
  }();
  return table[bits & (kCombinations - 1)];
}

namespace {

DEEPCONTEXT_HOT
void CUPTIAPI CuptiCallback(void* userdata, CUpti_CallbackDomain domain,
                              CUpti_CallbackId cbid, const void* data) {
  auto* state = static_cast<GpuBackendState*>(userdata);
  if (state == nullptr || data == nullptr) return;
  state->in_flight_.fetch_add(1, std::memory_order_acq_rel);
  if (!state->stopping_.load(std::memory_order_acquire)) {
    try {
      state->OnCallback(domain, cbid, data);
    } catch (...) {
      // Out of memory inside a CUDA call: lose this launch, not the program.
    }
  }
  state->in_flight_.fetch_sub(1, std::memory_order_acq_rel);
}

void CUPTIAPI RequestBuffer(uint8_t** buffer, size_t* size,
                                size_t* max_records) {
  // A null buffer makes CUPTI drop records (counted as dropped) rather
  // than fail.
  *buffer = BufferPool().Acquire();
  *size = *buffer != nullptr ? BufferPool().buffer_size() : 0;
  *max_records = 0;  // fill the buffer
}

void CUPTIAPI CompleteBuffer(CUcontext context, uint32_t stream_id,
                                uint8_t* buffer, size_t /*size*/,
                                size_t valid_size) {
  gpu::CompletedBuffer completed;
  completed.context = context;
  completed.stream_id = stream_id;
  completed.data = buffer;
  completed.valid_size = valid_size;
  if (!Worker().Submit(completed)) HandleCompleted(completed);
}

}  // namespace

void GpuBackendState::MoveTo(BackendLifecycle next) {
  if (!IsLegalTransition(lifecycle_, next)) {
    // A bug in this file or window_pause.cc: keep the state, whose CUPTI
    // rules still hold, rather than one that was never reached legally.
    std::fprintf(stderr,
                 "deepcontext: internal error: GPU backend lifecycle %.*s -> %.*s\n",
                 static_cast<int>(LifecycleName(lifecycle_).size()),
                 LifecycleName(lifecycle_).data(),
                 static_cast<int>(LifecycleName(next).size()),
                 LifecycleName(next).data());
    assert(false && "illegal GPU backend lifecycle transition");
    return;
  }
  lifecycle_ = next;
}

bool GpuBackendState::Active() const {
  std::lock_guard<std::mutex> active(ActiveMutex());
  return g_active == this;
}

Status GpuBackendState::Start() {
  std::lock_guard<std::mutex> guard(lifecycle_mutex_);
  if (lifecycle_ != BackendLifecycle::kIdle) {
    return Status::Error(std::string(kNotRecorded) + "the GPU backend was started already");
  }
  if (dlmonitor_init() != DLMONITOR_OK) {
    return Status::Error(std::string(kNotRecorded) + "DLMonitor failed to initialize");
  }
  MoveTo(BackendLifecycle::kStarting);

  api_classes_.assign(CUPTI_DRIVER_TRACE_CBID_SIZE, DriverApiClass::kOther);
  api_names_.assign(CUPTI_DRIVER_TRACE_CBID_SIZE, nullptr);
  for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    if (f_.get_callback_name(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) ==
            CUPTI_SUCCESS &&
        name != nullptr) {
      api_classes_[cbid] = ClassifyDriverApi(name);
      api_names_[cbid] = name;
    }
  }

  {
    std::lock_guard<std::mutex> active(ActiveMutex());
    if (g_active != nullptr) {
      return Status::Error(std::string(kNotRecorded) +
                           "a GPU backend is already running in this process");
    }
  }

  std::string kinds;
  size_t traced = 0;
  if (Status attached = Attach(&kinds, &traced); !attached.ok()) return attached;
  MoveTo(BackendLifecycle::kTracing);

  description_ = "CUPTI " + std::to_string(library_.runtime_version()) + " (" +
                 library_.path() + "): tracing " + kinds +
                 ", synchronizations; " +
                 std::to_string(traced) + " driver functions traced";
  if (!warnings_.empty()) {
    warnings_.resize(warnings_.size() - 2);  // the last "; "
    description_ += "; " + warnings_;
  }
  return Status::Ok();
}

Status GpuBackendState::Attach(std::string* kinds, size_t* traced) {
  // Attaching again between trace windows finds what the first attach
  // found; its warnings are in the description already.
  const bool first = kinds != nullptr;
  traced_callbacks_.clear();
  enabled_kinds_.clear();
  char old_subscriber[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {0};
  CUptiResult result;
  if (f_.subscribe_v2 != nullptr) {
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = kSubscriberName;
    params.oldSubscriberName = old_subscriber;
    params.oldSubscriberSize = sizeof(old_subscriber) - 1;
    result = f_.subscribe_v2(&subscriber_, &CuptiCallback, this, &params);
  } else {
    result = f_.subscribe(&subscriber_, &CuptiCallback, this);
  }
  if (result != CUPTI_SUCCESS) subscriber_ = nullptr;
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    std::string message = std::string(kNotRecorded) + kAnotherClient;
    if (old_subscriber[0] != '\0') {
      message += std::string(" (CUPTI names it \"") + old_subscriber + "\")";
    }
    // A second CUPTI library in the process is not named by CUPTI.
    const void* ours = f_.subscribe_v2 != nullptr ? reinterpret_cast<const void*>(f_.subscribe_v2)
                                                  : reinterpret_cast<const void*>(f_.subscribe);
    return Status::Error(message + OtherCopiesNote(OtherCuptiCopies(
                                       LoadedCuptiCopies(), LibraryHolding(ours))));
  }
  if (result != CUPTI_SUCCESS) {
    return Status::Error(std::string(kNotRecorded) + "cuptiSubscribe failed: " +
                         library_.ResultString(result));
  }
  held_subscription_ = true;
  {
    std::lock_guard<std::mutex> active(ActiveMutex());
    g_active = this;
  }

  TellCuptiBuffersAreCleared();
  result = f_.activity_register_callbacks(&RequestBuffer, &CompleteBuffer);
  if (result != CUPTI_SUCCESS) {
    return Status::Error(std::string(kNotRecorded) + "cuptiActivityRegisterCallbacks failed: " +
                         library_.ResultString(result));
  }

  bool launches = false;
  for (uint32_t cbid = 1; cbid < api_classes_.size(); ++cbid) {
    if (api_classes_[cbid] == DriverApiClass::kOther) continue;
    if (f_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid) ==
        CUPTI_SUCCESS) {
      traced_callbacks_.push_back(cbid);
      launches = launches || api_classes_[cbid] == DriverApiClass::kKernelLaunch;
    }
  }
  if (!launches) {
    return Status::Error(std::string(kNotRecorded) + "CUPTI refused the kernel launch callbacks");
  }
  for (CUpti_CallbackId cbid : {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                                CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED}) {
    result = f_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid);
    if (result != CUPTI_SUCCESS) {
      if (first) {
        warnings_ += "graph node callbacks unavailable (" +
                     library_.ResultString(result) +
                     "): CUDA graph kernels go to the graph launch; ";
      }
      break;
    }
  }
  // XLA's ranges (CUPTI receives NVTX when NVTX_INJECTION64_PATH names
  // it): optional, without them XLA's kernels hang under the Python line.
  for (size_t i = 0; i < kNvtxCallbackCount; ++i) {
    f_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_NVTX, kNvtxCallbacks[i]);
  }
  // Or from the runtime as the NVTX tool (nvtx_injection.h).
  if (const char* stats = std::getenv("DEEPCONTEXT_XLA_STATS"); stats != nullptr && *stats == '1') {
    xla_ranges_.EnableStats(/*timed=*/true);
  }
  SetNvtxToolTarget(&xla_ranges_);
  // Without these, graph launches keep an unknown record count: they are
  // still attributed, only held until a flush.
  for (CUpti_CallbackId cbid : {CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED,
                                CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING}) {
    f_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid);
  }
  // Cubins of modules loaded from now on, for the source lines of sampled
  // instructions; without the callback instructions have no line.
  if (pc_sampling_ != nullptr) {
    f_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                       CUPTI_CBID_RESOURCE_MODULE_LOADED);
    // Graphs cloned and destroyed, so that each graph launch's samples find
    // the sites where its kernels were captured (graph_kernel_sites.h).
    for (CUpti_CallbackId cbid : {CUPTI_CBID_RESOURCE_GRAPH_CLONED,
                                  CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING}) {
      f_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid);
    }
  }

  unsigned traced_kinds = 0;
  for (size_t i = 0; i < std::size(kActivityKinds); ++i) {
    const ActivityKindName& kind = kActivityKinds[i];
    result = f_.activity_enable(kind.kind);
    if (result == CUPTI_SUCCESS) {
      traced_kinds |= 1u << i;
      enabled_kinds_.push_back(kind.kind);
      if (first) {
        *kinds += kinds->empty() ? kind.name : std::string(", ") + kind.name;
      }
    } else if (kind.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      std::string message = std::string(kNotRecorded) + "CUPTI cannot trace kernels: " +
                            library_.ResultString(result);
      // Another tool's activity settings (e.g. serialized kernel tracing)
      // exclude ours.
      if (result == CUPTI_ERROR_NOT_COMPATIBLE) {
        message += " (another CUPTI client may be active)";
      }
      return Status::Error(message);
    } else if (first) {
      warnings_ += std::string(kind.name) + " not traced (" +
                   library_.ResultString(result) + "); ";
    }
  }
  traced_kinds_.store(traced_kinds, std::memory_order_release);
  if (first) *traced = traced_callbacks_.size();
  return Status::Ok();
}

void GpuBackendState::Stop() {
  std::lock_guard<std::mutex> guard(lifecycle_mutex_);
  if (Stopped()) return;
  // A detach asked for in a pause and not begun is called off; one under
  // way is waited for, and then CUPTI must not be called again.
  if (subscriber_ != nullptr) EndPause();
  const bool cupti_gone = CuptiGone();
  stopping_.store(true, std::memory_order_release);
  const bool was_tracing = TurnCallbacksAndKindsOff();
  // Kernels still running write their records when they end; waiting for
  // them completes those records and lets CUPTI be detached (Detach())
  // without work in flight. Callbacks are off, so these calls are not
  // traced.
  const bool waited = was_tracing && driver_->SynchronizeAllContexts();
  // The GPU is idle: the last instruction samples are complete.
  if (pc_sampling_ != nullptr && !cupti_gone) pc_sampling_->Stop();
  if (gpu_metrics_ != nullptr && !cupti_gone) gpu_metrics_->Stop();
  if (Active()) {
    // The last records, processed by the worker before the backend lets go.
    if (!cupti_gone) {
      f_.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      Worker().Drain();
    }
    std::lock_guard<std::mutex> active(ActiveMutex());
    if (g_active == this) g_active = nullptr;
  }
  if (subscriber_ != nullptr) {
    f_.unsubscribe(subscriber_);
    subscriber_ = nullptr;
  }
  // A callback that started before the unsubscription may still run on
  // another thread; it only touches this object, so wait for it (briefly:
  // callbacks take microseconds).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (in_flight_.load(std::memory_order_acquire) != 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  attribution_.Flush();
  WarnIfRecordsMissing();
  // Detached in a pause: cuptiFinalize waited for the GPU then.
  gpu_idle_at_stop_ = waited || cupti_gone ? 1 : 0;
  finalize_after_stop_ = was_tracing && f_.finalize != nullptr &&
                         DetachRefusal(DetachState()).empty();
  // Every state but kIdle holds the DLMonitor reference Start() took.
  if (lifecycle_ != BackendLifecycle::kIdle) dlmonitor_finalize();
  MoveTo(cupti_gone ? BackendLifecycle::kReleased : BackendLifecycle::kStopped);
}

bool GpuBackendState::TurnCallbacksAndKindsOff() {
  ReleaseNvtxToolTarget(&xla_ranges_);
  if (subscriber_ != nullptr) {
    f_.enable_domain(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
    f_.enable_domain(0, subscriber_, CUPTI_CB_DOMAIN_RESOURCE);
    f_.enable_domain(0, subscriber_, CUPTI_CB_DOMAIN_NVTX);
  }
  for (CUpti_ActivityKind kind : enabled_kinds_) f_.activity_disable(kind);
  const bool any = !enabled_kinds_.empty();
  enabled_kinds_.clear();
  return any;
}

void GpuBackendState::TellCuptiBuffersAreCleared() {
  // By default CUPTI clears each 8 MiB activity buffer it is given, on the
  // launching thread that filled the previous one: a stall in the middle of
  // the application's launches. The pool hands out cleared buffers
  // (activity_buffer_pool.h), so CUPTI is told to skip that. Set at every
  // attach, so that an attach after a detach has it too.
  const char* setting = std::getenv("DEEPCONTEXT_CUPTI_CLEARED_BUFFERS");
  const bool off = setting != nullptr && std::strcmp(setting, "0") == 0;
  if (f_.activity_set_attribute == nullptr) {
    buffers_cleared_by_ = "CUPTI, on the launching threads (no cuptiActivitySetAttribute)";
    return;
  }
  uint8_t cleared = off ? 0 : 1;
  size_t size = sizeof(cleared);
  const CUptiResult result = f_.activity_set_attribute(
      CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &cleared);
  if (off) {
    buffers_cleared_by_ =
        "CUPTI, on the launching threads (DEEPCONTEXT_CUPTI_CLEARED_BUFFERS=0)";
  } else if (result != CUPTI_SUCCESS) {
    buffers_cleared_by_ = "CUPTI, on the launching threads (" +
                          library_.ResultString(result) + ")";
  } else {
    buffers_cleared_by_ = "the profiler's record thread";
  }
}

std::optional<int64_t> GpuBackendState::ReadClockOffsetNs() const {
  uint64_t gpu_now = 0;
  if (f_.get_timestamp(&gpu_now) != CUPTI_SUCCESS) return std::nullopt;
  return static_cast<int64_t>(gpu_now) - cpu::RealtimeNs();
}

void GpuBackendState::Flush() {
  std::lock_guard<std::mutex> guard(lifecycle_mutex_);
  FlushRecords(/*judge_missing=*/true);
}

void GpuBackendState::FlushRecords(bool judge_missing) {
  // The worker processing the flushed buffers takes ActiveMutex, which is
  // therefore not held here. A pause that asked for a detach handed every
  // record over already; a CUPTI call now could race with the detach, and
  // one after it would attach CUPTI again.
  if (!Stopped() && CuptiCallable() && Active()) {
    if (judge_missing) attribution_.BeginFlush();
    if (pc_sampling_ != nullptr) pc_sampling_->Drain();
    f_.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    Worker().Drain();
  }
  attribution_.Flush();
  WarnIfRecordsMissing();
}

void GpuBackendState::Detach() {
  std::lock_guard<std::mutex> guard(lifecycle_mutex_);
  if (finalize_after_stop_ && lifecycle_ == BackendLifecycle::kStopped) {
    f_.finalize();
    MoveTo(BackendLifecycle::kReleased);
  }
  finalize_after_stop_ = false;
}

void GpuBackendState::WarnIfRecordsMissing() {
  // Once, when records are first found missing; the profile says it too.
  const uint64_t missing = attribution_.Stats().launches_without_records;
  if (missing > 0 && !warned_missing_records_) {
    warned_missing_records_ = true;
    std::fprintf(stderr, "deepcontext: warning: %s\n",
                 MissingRecordsWarning(missing).c_str());
  }
}

void GpuBackendState::OnBufferCompleted(CUcontext context, uint32_t stream_id,
                                        uint8_t* buffer, size_t valid_size) {
  processor_.ProcessBuffer(buffer, valid_size, &NextCuptiRecord,
                           const_cast<CuptiFunctions*>(&f_));
  size_t dropped = 0;
  if (f_.activity_get_num_dropped_records(context, stream_id, &dropped) ==
      CUPTI_SUCCESS) {
    dropped_records_.fetch_add(dropped, std::memory_order_relaxed);
  }
}

std::vector<std::pair<std::string, std::string>> GpuBackendState::Metadata()
    const {
  std::lock_guard<std::mutex> guard(lifecycle_mutex_);
  GpuMetadataInput input;
  input.cupti_version = library_.runtime_version();
  input.cupti_library = library_.path();
  input.driver_version = driver_->DriverVersion();
  // Devices that ran kernels are known already; the others are asked for
  // when the program has initialized the driver.
  input.devices = processor_.Devices();
  const int count = driver_->DeviceCount();
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    const auto device = static_cast<uint32_t>(ordinal);
    DeviceAttributes attributes;
    if (input.devices.count(device) == 0 &&
        driver_->QueryDevice(device, &attributes)) {
      input.devices.emplace(device, DeviceInfoFromAttributes(attributes));
    }
  }
  input.activity = attribution_.Devices();
  input.stats = attribution_.Stats();
  input.counters = processor_.Counters();
  input.dropped_records = dropped_records_.load(std::memory_order_relaxed);
  input.clock_offset_ns = CuptiCallable() ? ReadClockOffsetNs() : clock_offset_ns_;
  input.warnings = warnings_;
  auto metadata = GpuMetadata(input);
  metadata.emplace_back("gpu_cupti_detach", DetachDescription(DetachState()));
  if (!buffers_cleared_by_.empty()) {
    metadata.emplace_back("gpu_activity_buffers_cleared_by", buffers_cleared_by_);
  }
  // Nodes inside child graphs (e.g. XLA's traced commands) given the
  // context of the source node they were instantiated from.
  if (const uint64_t linked = linked_child_nodes_.load(std::memory_order_relaxed); linked != 0) {
    metadata.emplace_back("gpu_graph_child_nodes_linked", std::to_string(linked));
  }
  // Whether XLA's ranges arrived: without them JAX kernels have no
  // operation layer (no NVTX tool attached before JAX's first compile).
  if (xla_ranges_.seen_ranges()) {
    metadata.emplace_back("gpu_xla_op_ranges", std::to_string(xla_ranges_.op_ranges()));
    metadata.emplace_back("gpu_xla_ranges_from",
                          NvtxToolInjected() ? "runtime NVTX tool" : "CUPTI NVTX callbacks");
    // Kernels captured into command buffers, and how many records of them
    // were placed by position (xla_ranges.h).
    if (const uint64_t captured = xla_ranges_.captured_kernels(); captured != 0) {
      metadata.emplace_back("gpu_xla_captured_kernels", std::to_string(captured));
      metadata.emplace_back("gpu_xla_graph_kernels_by_position",
                            std::to_string(xla_ranges_.graph_kernels_placed()));
    }
    // Records of command buffers launched by another call than the one
    // that recorded them, moved under the launching call.
    if (const uint64_t moved = xla_ranges_.replayed_records_moved(); moved != 0) {
      metadata.emplace_back("gpu_xla_replayed_records_moved", std::to_string(moved));
    }
  }
  if (std::string stats = xla_ranges_.StatsLine(); !stats.empty()) {
    // Asked for by DEEPCONTEXT_XLA_STATS=1: also where a measurement sees it.
    std::fprintf(stderr, "deepcontext: gpu_xla_stats %s\n", stats.c_str());
    metadata.emplace_back("gpu_xla_stats", std::move(stats));
  }
  if (pc_sampling_ != nullptr) {
    for (auto& entry : pc_sampling_->Metadata()) metadata.push_back(std::move(entry));
  }
  if (gpu_metrics_ != nullptr) {
    for (auto& entry : gpu_metrics_->Metadata()) metadata.push_back(std::move(entry));
  }
  if (detach_between_windows_) {
    for (auto& entry : gpu::WindowDetachMetadata(window_detach_.stats(), window_error_)) {
      metadata.push_back(std::move(entry));
    }
  }
  return metadata;
}

DetachInput GpuBackendState::DetachState() const {
  DetachInput input;
  input.cupti_api_version = library_.runtime_version();
  input.setting = std::getenv("DEEPCONTEXT_CUPTI_DETACH");
  input.subscribed = held_subscription_;
  input.launches_without_records =
      attribution_.Stats().launches_without_records;
  input.gpu_idle = gpu_idle_at_stop_ != 0;
  return input;
}

}  // namespace deepcontext::cupti
