#include "tests/unit/runtime/cupti/fake_cupti.h"

#include <cstdint>
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
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI EnableCallback(uint32_t enable, CUpti_SubscriberHandle,
                                    CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  Count();
  FakeCuptiState& s = FakeCupti();
  std::lock_guard<std::mutex> guard(s.mutex);
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

CUptiResult CUPTIAPI RegisterCallbacks(CUpti_BuffersCallbackRequestFunc,
                                       CUpti_BuffersCallbackCompleteFunc) {
  Count();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI FlushAll(uint32_t) {
  Count();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI GetNextRecord(uint8_t*, size_t, CUpti_Activity**) {
  return CUPTI_ERROR_MAX_LIMIT_REACHED;
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
    default:
      *name = "cuOtherCall";
      break;
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI GetGraphNodeId(CUgraphNode, uint64_t* id) {
  *id = 0;
  return CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult CUPTIAPI Finalize() {
  Count();
  FakeCuptiState& s = FakeCupti();
  std::lock_guard<std::mutex> guard(s.mutex);
  ++s.finalizes;
  s.finalized_on = std::this_thread::get_id();
  s.subscribed = false;
  s.driver_callbacks.clear();
  s.kinds.clear();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI GetTimestamp(uint64_t* timestamp) {
  Count();
  *timestamp = 1'000'000;
  return CUPTI_SUCCESS;
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
  f.activity_get_next_record = &GetNextRecord;
  f.activity_get_num_dropped_records = &GetNumDroppedRecords;
  f.get_callback_name = &GetCallbackName;
  f.get_graph_node_id = &GetGraphNodeId;
  f.finalize = &Finalize;
  f.get_timestamp = &GetTimestamp;
  return f;
}

int FakeCuptiCalls() {
  std::lock_guard<std::mutex> guard(FakeCupti().mutex);
  return FakeCupti().calls;
}

bool FakeCuptiTraces(CUpti_CallbackId cbid) {
  FakeCuptiState& s = FakeCupti();
  std::lock_guard<std::mutex> guard(s.mutex);
  return s.subscribed && s.driver_callbacks.count(cbid) != 0;
}

void FakeCuptiCallExit(CUpti_CallbackId cbid) {
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  {
    FakeCuptiState& s = FakeCupti();
    std::lock_guard<std::mutex> guard(s.mutex);
    if (!s.subscribed || s.driver_callbacks.count(cbid) == 0) return;
    callback = s.callback;
    userdata = s.userdata;
  }
  CUpti_CallbackData data{};
  data.callbackSite = CUPTI_API_EXIT;
  data.functionName = "cuLaunchKernel";
  callback(userdata, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
}

}  // namespace deepcontext::cupti::fake
