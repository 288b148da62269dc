#include "tests/unit/runtime/cupti/fake_cupti.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

namespace deepcontext::cupti::fake {
namespace {

std::unique_ptr<FakeCuptiState>& State() {
  static std::unique_ptr<FakeCuptiState> state = std::make_unique<FakeCuptiState>();
  return state;
}

void Count() {
  std::lock_guard<std::mutex> guard(FakeCupti().mutex);
  ++FakeCupti().calls;
}

CUptiResult CUPTIAPI GetVersion(uint32_t* version) {
  *version = 130001;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI GetResultString(CUptiResult, const char** text) {
  *text = "fake CUPTI error";
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI Subscribe(CUpti_SubscriberHandle* subscriber,
                               CUpti_CallbackFunc callback, void* userdata) {
  Count();
  FakeCuptiState& s = FakeCupti();
  std::lock_guard<std::mutex> guard(s.mutex);
  if (s.other_client || s.subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  s.subscribed = true;
  s.callback = callback;
  s.userdata = userdata;
  ++s.subscribes;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(uintptr_t{0x5});
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI Unsubscribe(CUpti_SubscriberHandle) {
  Count();
  FakeCuptiState& s = FakeCupti();
  std::lock_guard<std::mutex> guard(s.mutex);
  s.subscribed = false;
  ++s.unsubscribes;
  s.driver_callbacks.clear();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI EnableDomain(uint32_t enable, CUpti_SubscriberHandle,
                                  CUpti_CallbackDomain domain) {
  Count();
  FakeCuptiState& s = FakeCupti();
  std::lock_guard<std::mutex> guard(s.mutex);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && enable == 0) s.driver_callbacks.clear();
  if (domain == CUPTI_CB_DOMAIN_NVTX && enable == 0) s.nvtx_callbacks.clear();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI EnableCallback(uint32_t enable, CUpti_SubscriberHandle,
                                    CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  Count();
  FakeCuptiState& s = FakeCupti();
  std::lock_guard<std::mutex> guard(s.mutex);
  if (domain == CUPTI_CB_DOMAIN_NVTX) {
    if (enable != 0) {
      s.nvtx_callbacks.insert(cbid);
    } else {
      s.nvtx_callbacks.erase(cbid);
    }
    return CUPTI_SUCCESS;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return CUPTI_SUCCESS;
  if (enable != 0) {
    s.driver_callbacks.insert(cbid);
  } else {
    s.driver_callbacks.erase(cbid);
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI ActivityEnable(CUpti_ActivityKind kind) {
  Count();
  FakeCuptiState& s = FakeCupti();
  std::lock_guard<std::mutex> guard(s.mutex);
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && s.kernel_kind_result != CUPTI_SUCCESS) {
    return s.kernel_kind_result;
  }
  s.kinds.insert(kind);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI ActivityDisable(CUpti_ActivityKind kind) {
  Count();
  FakeCuptiState& s = FakeCupti();
  std::lock_guard<std::mutex> guard(s.mutex);
  s.kinds.erase(kind);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI RegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                       CUpti_BuffersCallbackCompleteFunc complete) {
  Count();
  FakeCuptiState& s = FakeCupti();
  std::lock_guard<std::mutex> guard(s.mutex);
  s.request_buffer = request;
  s.complete_buffer = complete;
  return CUPTI_SUCCESS;
}

// Hands the records over in one buffer of the client's, as CUPTI does: the
// client's callbacks run without the fake's lock held.
void HandOver(bool with_running) {
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  std::vector<CUpti_ActivityKernel10> records;
  {
    FakeCuptiState& s = FakeCupti();
    std::lock_guard<std::mutex> guard(s.mutex);
    request = s.request_buffer;
    complete = s.complete_buffer;
    records.swap(s.finished);
    if (with_running) {
      records.insert(records.end(), s.running.begin(), s.running.end());
      s.running.clear();
    }
  }
  if (records.empty() || request == nullptr || complete == nullptr) return;
  uint8_t* buffer = nullptr;
  size_t size = 0;
  size_t max_records = 0;
  request(&buffer, &size, &max_records);
  const size_t bytes = records.size() * sizeof(CUpti_ActivityKernel10);
  if (buffer == nullptr || size < bytes) return;
  if (std::any_of(buffer, buffer + size, [](uint8_t byte) { return byte != 0; })) {
    FakeCuptiState& s = FakeCupti();
    std::lock_guard<std::mutex> guard(s.mutex);
    ++s.uncleared_buffers;
  }
  std::memcpy(buffer, records.data(), bytes);
  complete(nullptr, 0, buffer, size, bytes);
}

CUptiResult CUPTIAPI SetAttribute(CUpti_ActivityAttribute attribute, size_t* size,
                                  void* value) {
  Count();
  if (attribute != CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER || *size != 1) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  FakeCuptiState& s = FakeCupti();
  std::lock_guard<std::mutex> guard(s.mutex);
  s.cleared_buffers_attribute = *static_cast<uint8_t*>(value);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI FlushAll(uint32_t flag) {
  Count();
  HandOver(flag == CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  return CUPTI_SUCCESS;
}

// Every record the fake writes is a CUpti_ActivityKernel10.
CUptiResult CUPTIAPI GetNextRecord(uint8_t* buffer, size_t valid_size, CUpti_Activity** record) {
  uint8_t* next = *record == nullptr
                      ? buffer
                      : reinterpret_cast<uint8_t*>(*record) + sizeof(CUpti_ActivityKernel10);
  if (next + sizeof(CUpti_ActivityKernel10) > buffer + valid_size) {
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  }
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI GetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  Count();
  *dropped = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI GetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                     const char** name) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      *name = "cuLaunchKernel";
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
      *name = "cuCtxSynchronize";
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
      *name = "cuGraphLaunch";
      break;
    default:
      *name = "cuOtherCall";
      break;
  }
  return CUPTI_SUCCESS;
}

// A node's id is its address, as unique as CUPTI's.
CUptiResult CUPTIAPI GetGraphNodeId(CUgraphNode node, uint64_t* id) {
  *id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(node));
  return node != nullptr ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult CUPTIAPI Finalize() {
  Count();
  // At a call's exit CUPTI waits for the work in flight and hands over its
  // last records before it lets go.
  HandOver(/*with_running=*/true);
  FakeCuptiState& s = FakeCupti();
  std::lock_guard<std::mutex> guard(s.mutex);
  ++s.finalizes;
  s.finalized_on = std::this_thread::get_id();
  s.subscribed = false;
  s.driver_callbacks.clear();
  s.kinds.clear();
  return CUPTI_SUCCESS;
}

// Every context is on device 0.
CUptiResult CUPTIAPI GetDeviceId(CUcontext, uint32_t* device) {
  Count();
  *device = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI GetTimestamp(uint64_t* timestamp) {
  Count();
  *timestamp = 1'000'000;
  return CUPTI_SUCCESS;
}

// The subscriber CUPTI would call for driver call `cbid`: none unless
// subscribed with that callback on. Read under the lock, called without it.
struct Subscriber {
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
};

Subscriber SubscriberFor(CUpti_CallbackId cbid) {
  FakeCuptiState& s = FakeCupti();
  std::lock_guard<std::mutex> guard(s.mutex);
  if (!s.subscribed || s.driver_callbacks.count(cbid) == 0) return {};
  return {s.callback, s.userdata};
}

}  // namespace

FakeCuptiState& FakeCupti() { return *State(); }

void ResetFakeCupti() { State() = std::make_unique<FakeCuptiState>(); }

CuptiFunctions FakeCuptiFunctions() {
  CuptiFunctions f;
  f.get_version = &GetVersion;
  f.get_result_string = &GetResultString;
  f.subscribe = &Subscribe;
  f.unsubscribe = &Unsubscribe;
  f.enable_domain = &EnableDomain;
  f.enable_callback = &EnableCallback;
  f.activity_enable = &ActivityEnable;
  f.activity_disable = &ActivityDisable;
  f.activity_register_callbacks = &RegisterCallbacks;
  f.activity_flush_all = &FlushAll;
  f.activity_set_attribute = &SetAttribute;
  f.activity_get_next_record = &GetNextRecord;
  f.activity_get_num_dropped_records = &GetNumDroppedRecords;
  f.get_callback_name = &GetCallbackName;
  f.get_graph_node_id = &GetGraphNodeId;
  f.finalize = &Finalize;
  f.get_timestamp = &GetTimestamp;
  f.get_device_id = &GetDeviceId;
  return f;
}

int FakeCuptiCalls() {
  std::lock_guard<std::mutex> guard(FakeCupti().mutex);
  return FakeCupti().calls;
}

bool FakeCuptiTraces(CUpti_CallbackId cbid) { return SubscriberFor(cbid).callback != nullptr; }

void FakeCuptiCallExit(CUpti_CallbackId cbid) {
  const Subscriber subscriber = SubscriberFor(cbid);
  if (subscriber.callback == nullptr) return;
  CUpti_CallbackData data{};
  data.callbackSite = CUPTI_API_EXIT;
  data.functionName = "cuLaunchKernel";
  subscriber.callback(subscriber.userdata, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
}

void FakeCuptiNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData& data) {
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  {
    FakeCuptiState& s = FakeCupti();
    std::lock_guard<std::mutex> guard(s.mutex);
    if (!s.subscribed || s.nvtx_callbacks.count(cbid) == 0) return;
    callback = s.callback;
    userdata = s.userdata;
  }
  if (callback != nullptr) callback(userdata, CUPTI_CB_DOMAIN_NVTX, cbid, &data);
}

void FakeCuptiLaunch(uint32_t correlation_id, const char* symbol_name) {
  constexpr CUpti_CallbackId kLaunch = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  const Subscriber subscriber = SubscriberFor(kLaunch);
  if (subscriber.callback == nullptr) return;
  CUresult result = CUDA_SUCCESS;
  CUpti_CallbackData data{};
  data.functionName = "cuLaunchKernel";
  data.symbolName = symbol_name;
  data.correlationId = correlation_id;
  data.functionReturnValue = &result;
  for (CUpti_ApiCallbackSite site : {CUPTI_API_ENTER, CUPTI_API_EXIT}) {
    data.callbackSite = site;
    subscriber.callback(subscriber.userdata, CUPTI_CB_DOMAIN_DRIVER_API, kLaunch, &data);
  }
}

void FakeCuptiKernelRecord(uint32_t correlation_id, uint64_t start_ns, uint64_t end_ns,
                           bool running, uint64_t graph_node_id) {
  CUpti_ActivityKernel10 record{};
  record.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  record.correlationId = correlation_id;
  record.start = start_ns;
  record.end = end_ns;
  record.deviceId = 0;
  record.contextId = 1;
  record.streamId = 7;
  record.gridX = record.gridY = record.gridZ = 1;
  record.blockX = 128;
  record.blockY = record.blockZ = 1;
  record.registersPerThread = 32;
  record.name = "fake_kernel";
  record.graphNodeId = graph_node_id;
  record.graphId = static_cast<uint32_t>(graph_node_id >> 32);
  FakeCuptiState& s = FakeCupti();
  std::lock_guard<std::mutex> guard(s.mutex);
  (running ? s.running : s.finished).push_back(record);
}

}  // namespace deepcontext::cupti::fake
