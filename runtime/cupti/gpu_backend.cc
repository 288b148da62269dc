#include "runtime/cupti/gpu_backend.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <mutex>
#include <string_view>
#include <thread>

#include "deepcontext/dlmonitor.h"
#include "runtime/cupti/activity_buffer_pool.h"
#include "runtime/cupti/activity_processor.h"
#include "runtime/cupti/cuda_driver.h"
#include "runtime/cupti/cupti_functions.h"
#include "runtime/cupti/cupti_loader.h"
#include "runtime/cupti/driver_api.h"
#include "runtime/cupti/gpu_attribution.h"
#include "runtime/cupti/gpu_metadata.h"
#include "runtime/cupti/graph_launch_tracker.h"

namespace deepcontext::cupti {
namespace {

constexpr char kSubscriberName[] = "DeepContext";
constexpr char kAnotherClient[] =
    "another CUPTI client (torch.profiler, Nsight Systems, ...) is active: "
    "no GPU activity recorded";
// API name for graph nodes created outside any traced call.
constexpr std::string_view kGraphNodeApi = "<graph node>";

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
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronizations",
     &TracedActivity::syncs},
};

// The traced driver call running on this thread, between its entry and
// exit callbacks (driver calls do not nest).
struct ApiCall {
  const char* name = nullptr;
  uint64_t correlation_id = 0;
  ContextId context = 0;
  // A graph node was created inside the call: the call was captured into
  // a graph and will produce no records of its own.
  bool created_graph_node = false;
};
thread_local ApiCall t_call;

uint64_t ThreadId() {
  thread_local const uint64_t id = static_cast<uint64_t>(syscall(SYS_gettid));
  return id;
}

// Bit i of `bits` set: kActivityKinds[i] is enabled.
TracedActivity TracedFromBits(unsigned bits) {
  TracedActivity traced;
  for (size_t i = 0; i < std::size(kActivityKinds); ++i) {
    traced.*kActivityKinds[i].traced = (bits >> i & 1u) != 0;
  }
  return traced;
}

int64_t RealtimeNs() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

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

void CUPTIAPI CuptiCallback(void* userdata, CUpti_CallbackDomain domain,
                              CUpti_CallbackId cbid, const void* data);
void CUPTIAPI RequestBuffer(uint8_t** buffer, size_t* size,
                                size_t* max_records);
void CUPTIAPI CompleteBuffer(CUcontext context, uint32_t stream_id,
                                uint8_t* buffer, size_t size, size_t valid_size);

}  // namespace

// Everything the running backend owns. Its callbacks run on application
// threads (API and resource callbacks) and on CUPTI's thread (completed
// buffers).
class GpuBackendState {
 public:
  GpuBackendState(profiler::MetricStore& store, const CuptiLibrary& library,
                  std::unique_ptr<CudaDriver> driver)
      : library_(library),
        f_(*library.functions()),
        driver_(std::move(driver)),
        sink_(store),
        attribution_(sink_),
        processor_(attribution_, [this](uint32_t device, DeviceInfo* info) {
          DeviceAttributes attributes;
          if (!driver_->QueryDevice(device, &attributes)) return false;
          *info = DeviceInfoFromAttributes(attributes);
          return true;
        }),
        graphs_(*driver_) {}

  GpuBackendState(const GpuBackendState&) = delete;
  GpuBackendState& operator=(const GpuBackendState&) = delete;
  ~GpuBackendState() { Stop(); }

  // "" when tracing, otherwise why not; Stop() cleans up either way.
  std::string Start();
  void Stop();
  void Flush();
  std::vector<std::pair<std::string, std::string>> Metadata() const;
  // What Start() enabled, for the status line.
  const std::string& description() const { return description_; }

  // CUPTI entry points (see the functions in the anonymous namespace).
  void OnCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                  const void* data);
  void OnBufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                         size_t valid_size);

  // Callbacks currently running; Stop() waits for them to finish.
  std::atomic<int> in_flight_{0};
  std::atomic<bool> stopping_{false};

 private:
  void OnDriverApi(CUpti_CallbackId cbid, const CUpti_CallbackData& data);
  void OnResource(CUpti_CallbackId cbid, const CUpti_ResourceData& data);
  TracedActivity Traced() const {
    return TracedFromBits(traced_kinds_.load(std::memory_order_acquire));
  }

  const CuptiLibrary& library_;
  const CuptiFunctions& f_;
  const std::unique_ptr<CudaDriver> driver_;
  MetricStoreSink sink_;
  GpuAttribution attribution_;
  ActivityProcessor processor_;
  GraphLaunchTracker graphs_;

  // Indexed by driver callback id; written by Start() before subscribing.
  std::vector<DriverApiClass> api_classes_;
  std::vector<const char*> api_names_;

  std::mutex lifecycle_mutex_;  // serializes Start, Flush and Stop
  bool dlmonitor_initialized_ = false;
  bool subscribed_ = false;
  bool registered_ = false;  // activity callbacks point at this backend
  bool stopped_ = false;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::vector<CUpti_ActivityKind> enabled_kinds_;
  std::string description_;
  std::string warnings_;
  bool warned_missing_records_ = false;
  std::atomic<uint64_t> dropped_records_{0};
  // Bit i: kActivityKinds[i] is enabled. All until Start() knows, so that
  // launches during Start() expect records as before.
  std::atomic<unsigned> traced_kinds_{~0u};
};

namespace {

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
  {
    std::lock_guard<std::mutex> guard(ActiveMutex());
    if (g_active != nullptr) {
      g_active->OnBufferCompleted(context, stream_id, buffer, valid_size);
    }
  }
  BufferPool().Release(buffer);
}

}  // namespace

std::string GpuBackendState::Start() {
  std::lock_guard<std::mutex> guard(lifecycle_mutex_);
  if (dlmonitor_init() != DLMONITOR_OK) return "DLMonitor failed to initialize";
  dlmonitor_initialized_ = true;

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
      return "a GPU backend is already running in this process";
    }
  }

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
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    std::string message = kAnotherClient;
    if (old_subscriber[0] != '\0') {
      message += std::string(" (CUPTI names it \"") + old_subscriber + "\")";
    }
    return message;
  }
  if (result != CUPTI_SUCCESS) {
    return "no GPU activity recorded: cuptiSubscribe failed: " +
           library_.ResultString(result);
  }
  subscribed_ = true;

  {
    std::lock_guard<std::mutex> active(ActiveMutex());
    g_active = this;
  }
  registered_ = true;
  result = f_.activity_register_callbacks(&RequestBuffer, &CompleteBuffer);
  if (result != CUPTI_SUCCESS) {
    return "no GPU activity recorded: cuptiActivityRegisterCallbacks "
           "failed: " + library_.ResultString(result);
  }

  size_t traced = 0;
  bool launches = false;
  for (uint32_t cbid = 1; cbid < api_classes_.size(); ++cbid) {
    if (api_classes_[cbid] == DriverApiClass::kOther) continue;
    if (f_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid) ==
        CUPTI_SUCCESS) {
      ++traced;
      launches = launches || api_classes_[cbid] == DriverApiClass::kKernelLaunch;
    }
  }
  if (!launches) {
    return "no GPU activity recorded: CUPTI refused the kernel launch "
           "callbacks";
  }
  for (CUpti_CallbackId cbid : {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                                CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED}) {
    result = f_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid);
    if (result != CUPTI_SUCCESS) {
      warnings_ += "graph node callbacks unavailable (" +
                   library_.ResultString(result) +
                   "): CUDA graph kernels go to the graph launch; ";
      break;
    }
  }
  // Without these, graph launches keep an unknown record count: they are
  // still attributed, only held until a flush.
  for (CUpti_CallbackId cbid : {CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED,
                                CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING}) {
    f_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid);
  }

  std::string kinds;
  unsigned traced_kinds = 0;
  for (size_t i = 0; i < std::size(kActivityKinds); ++i) {
    const ActivityKindName& kind = kActivityKinds[i];
    result = f_.activity_enable(kind.kind);
    if (result == CUPTI_SUCCESS) {
      traced_kinds |= 1u << i;
      enabled_kinds_.push_back(kind.kind);
      kinds += kinds.empty() ? kind.name : std::string(", ") + kind.name;
    } else if (kind.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      std::string message =
          "no GPU activity recorded: CUPTI cannot trace kernels: " +
          library_.ResultString(result);
      // Another tool's activity settings (e.g. serialized kernel tracing)
      // exclude ours.
      if (result == CUPTI_ERROR_NOT_COMPATIBLE) {
        message += " (another CUPTI client may be active)";
      }
      return message;
    } else {
      warnings_ += std::string(kind.name) + " not traced (" +
                   library_.ResultString(result) + "); ";
    }
  }
  traced_kinds_.store(traced_kinds, std::memory_order_release);

  description_ = "CUPTI " + std::to_string(library_.runtime_version()) + " (" +
                 library_.path() + "): tracing " + kinds + "; " +
                 std::to_string(traced) + " driver functions traced";
  if (!warnings_.empty()) {
    warnings_.resize(warnings_.size() - 2);  // the last "; "
    description_ += "; " + warnings_;
  }
  return "";
}

void GpuBackendState::Stop() {
  std::lock_guard<std::mutex> guard(lifecycle_mutex_);
  if (stopped_) return;
  stopping_.store(true, std::memory_order_release);
  if (subscribed_) {
    f_.enable_domain(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
    f_.enable_domain(0, subscriber_, CUPTI_CB_DOMAIN_RESOURCE);
  }
  for (CUpti_ActivityKind kind : enabled_kinds_) f_.activity_disable(kind);
  enabled_kinds_.clear();
  if (registered_) {
    // The last records; processed on this thread by OnBufferCompleted.
    f_.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard<std::mutex> active(ActiveMutex());
    if (g_active == this) g_active = nullptr;
    registered_ = false;
  }
  if (subscribed_) {
    f_.unsubscribe(subscriber_);
    subscribed_ = false;
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
  if (dlmonitor_initialized_) {
    dlmonitor_finalize();
    dlmonitor_initialized_ = false;
  }
  stopped_ = true;
}

void GpuBackendState::Flush() {
  std::lock_guard<std::mutex> guard(lifecycle_mutex_);
  // The completion callback runs on this thread during the flush and takes
  // ActiveMutex, which is therefore not held here.
  if (registered_ && !stopped_) {
    attribution_.BeginFlush();
    f_.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  attribution_.Flush();
  // Once, when records are first found missing; the profile says it too.
  const uint64_t missing = attribution_.Stats().launches_without_records;
  if (missing > 0 && !warned_missing_records_) {
    warned_missing_records_ = true;
    std::fprintf(stderr, "deepcontext: warning: %s\n",
                 MissingRecordsWarning(missing).c_str());
  }
}

void GpuBackendState::OnCallback(CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    OnDriverApi(cbid, *static_cast<const CUpti_CallbackData*>(data));
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    OnResource(cbid, *static_cast<const CUpti_ResourceData*>(data));
  }
}

void GpuBackendState::OnDriverApi(CUpti_CallbackId cbid,
                                  const CUpti_CallbackData& data) {
  if (cbid >= api_classes_.size()) return;
  const DriverApiClass api = api_classes_[cbid];
  if (api == DriverApiClass::kOther) return;
  if (api == DriverApiClass::kGraphExecEdit) {
    if (data.callbackSite == CUPTI_API_ENTER) {
      graphs_.OnNodeSetEnabled(cbid, data.functionParams);
    }
    return;
  }
  const char* name = data.functionName != nullptr ? data.functionName
                                                  : api_names_[cbid];
  if (name == nullptr) name = "<driver API>";

  dlmonitor_gpu_api_data_t payload{};
  payload.struct_size = sizeof(payload);
  payload.name = name;
  payload.correlation_id = data.correlationId;
  dlmonitor_event_t event{};
  event.struct_size = sizeof(event);
  event.domain = DLMONITOR_DOMAIN_GPU_API;
  event.gpu_api = &payload;

  if (data.callbackSite == CUPTI_API_ENTER) {
    event.phase = DLMONITOR_PHASE_ENTER;
    // DLMonitor fills event.context when a tool listens to GPU API events;
    // otherwise the context is looked up here.
    dlmonitor_event_emit(&event);
    ContextId context = event.context;
    if (context == 0 && dlmonitor_context_current(&context) != DLMONITOR_OK) {
      context = 0;
    }
    t_call = ApiCall{name, data.correlationId, context, false};
    if (!ProducesRecords(api)) return;
    LaunchRecord launch;
    launch.correlation_id = data.correlationId;
    launch.context = context;
    launch.api_name = name;
    launch.thread = ThreadId();
    launch.expected_records =
        api == DriverApiClass::kGraphLaunch
            ? graphs_.LaunchRecords(cbid, data.functionParams)
            : ExpectedRecords(api,
                              api_names_[cbid] != nullptr ? api_names_[cbid] : name,
                              Traced());
    launch.record_at_return = api == DriverApiClass::kSync;
    attribution_.OnLaunch(launch);
    return;
  }
  // API exit.
  if (ProducesRecords(api)) {
    const bool captured = t_call.created_graph_node &&
                          t_call.correlation_id == data.correlationId &&
                          api != DriverApiClass::kGraphLaunch;
    // A failed call enqueued nothing; a failed synchronization may still
    // have waited and been recorded.
    const auto* result = static_cast<const CUresult*>(data.functionReturnValue);
    const bool failed = api != DriverApiClass::kSync && result != nullptr &&
                        *result != CUDA_SUCCESS;
    if (captured || failed) attribution_.ForgetLaunch(data.correlationId);
  }
  t_call = ApiCall{};
  event.phase = DLMONITOR_PHASE_EXIT;
  dlmonitor_event_emit(&event);
}

void GpuBackendState::OnResource(CUpti_CallbackId cbid,
                                 const CUpti_ResourceData& data) {
  if (graphs_.OnResource(cbid, data.resourceDescriptor, Traced())) return;
  if (cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED &&
      cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    return;
  }
  const auto* graph = static_cast<const CUpti_GraphData*>(data.resourceDescriptor);
  if (graph == nullptr || graph->node == nullptr) return;
  uint64_t node_id = 0;
  if (f_.get_graph_node_id(graph->node, &node_id) != CUPTI_SUCCESS) return;

  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    uint64_t original_id = 0;
    if (graph->originalNode != nullptr &&
        f_.get_graph_node_id(graph->originalNode, &original_id) == CUPTI_SUCCESS) {
      attribution_.OnGraphNodeCloned(node_id, original_id);
    }
    return;
  }
  // Inside a traced call (a launch captured from a stream, or cuGraphAdd*)
  // the call's context was taken at its entry.
  ContextId context = t_call.context;
  std::string_view api = kGraphNodeApi;
  if (t_call.name != nullptr) {
    api = t_call.name;
    t_call.created_graph_node = true;
  } else if (dlmonitor_context_current(&context) != DLMONITOR_OK) {
    context = 0;
  }
  attribution_.OnGraphNodeCreated(node_id, context, api);
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
  uint64_t gpu_now = 0;
  if (f_.get_timestamp(&gpu_now) == CUPTI_SUCCESS) {
    input.clock_offset_ns = static_cast<int64_t>(gpu_now) - RealtimeNs();
  }
  input.warnings = warnings_;
  return GpuMetadata(input);
}

GpuBackend::GpuBackend(std::unique_ptr<GpuBackendState> state)
    : state_(std::move(state)) {}

GpuBackend::~GpuBackend() = default;

std::unique_ptr<GpuBackend> GpuBackend::Start(profiler::MetricStore& store,
                                              std::string* status) {
  std::string ignored;
  std::string& out = status != nullptr ? *status : ignored;
  try {
    const CuptiLibrary& library = CuptiLibrary::Get();
    if (!library.available()) {
      out = "no GPU activity recorded: CUPTI " + library.error();
      return nullptr;
    }
    std::string driver_error;
    std::unique_ptr<CudaDriver> driver = CudaDriver::Load(&driver_error);
    if (driver == nullptr) {
      out = "no GPU activity recorded: " + driver_error;
      return nullptr;
    }
    auto state = std::make_unique<GpuBackendState>(store, library, std::move(driver));
    const std::string error = state->Start();
    if (!error.empty()) {
      state->Stop();
      out = error;
      return nullptr;
    }
    out = state->description();
    return std::unique_ptr<GpuBackend>(new GpuBackend(std::move(state)));
  } catch (...) {
    out = "no GPU activity recorded: out of memory while starting";
    return nullptr;
  }
}

void GpuBackend::Flush() {
  try {
    state_->Flush();
  } catch (...) {
    // Out of memory while crediting: the profile lacks those records.
  }
}

std::vector<std::pair<std::string, std::string>> GpuBackend::Metadata() const {
  try {
    return state_->Metadata();
  } catch (...) {
    return {};
  }
}

void GpuBackend::Stop() {
  try {
    state_->Stop();
  } catch (...) {
  }
}

}  // namespace deepcontext::cupti
