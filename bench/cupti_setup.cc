#include "bench/cupti_setup.h"

#include <cstdlib>
#include <iterator>

#include "runtime/cupti/driver_api.h"

namespace deepcontext::bench {
namespace {

void CUPTIAPI EmptyCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId,
                            const void*) {}

void CUPTIAPI RequestBuffer(uint8_t** buffer, size_t* size, size_t* max_records) {
  constexpr size_t kSize = 8 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kSize));
  *size = *buffer != nullptr ? kSize : 0;
  *max_records = 0;
}

void CUPTIAPI CompleteBuffer(CUcontext, uint32_t, uint8_t* buffer, size_t,
                             size_t) {
  std::free(buffer);
}

// The activity kinds the runtime enables (runtime/cupti/gpu_backend_state.cc;
// not SYNCHRONIZATION, see gpu_launch_cost's row "both + synchronization
// records").
constexpr CUpti_ActivityKind kDeepContextKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET};

// The driver functions the runtime traces, by the runtime's own rule.
bool TracedByDeepContext(const char* name) {
  return cupti::ClassifyDriverApi(name) != cupti::DriverApiClass::kOther;
}

}  // namespace

CuptiPieces LaunchPieces(bool callbacks, bool activity) {
  CuptiPieces pieces;
  pieces.launch_callbacks = callbacks;
  if (activity) pieces.kinds = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
  return pieces;
}

CuptiPieces DeepContextPieces(bool callbacks) {
  CuptiPieces pieces;
  pieces.traced_callbacks = callbacks;
  pieces.resource_callbacks = callbacks;
  pieces.kinds.assign(std::begin(kDeepContextKinds), std::end(kDeepContextKinds));
  return pieces;
}

CuptiSetup::CuptiSetup(const cupti::CuptiFunctions& f, const CuptiPieces& pieces,
                       bool detach)
    : f_(f), detach_(detach), kinds_(pieces.kinds), attributes_(pieces.attributes) {
  const bool subscribe = pieces.launch_callbacks || pieces.traced_callbacks ||
                         pieces.resource_callbacks;
  if (subscribe) {
    ok_ = f_.subscribe(&subscriber_, &EmptyCallback, nullptr) == CUPTI_SUCCESS;
    if (!ok_) subscriber_ = nullptr;
  }
  if (pieces.launch_callbacks) {
    for (CUpti_CallbackId cbid : {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz}) {
      ok_ = ok_ && f_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API,
                                      cbid) == CUPTI_SUCCESS;
    }
  }
  for (CUpti_CallbackId cbid = 1;
       pieces.traced_callbacks && ok_ && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    if (f_.get_callback_name(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) == CUPTI_SUCCESS &&
        name != nullptr && TracedByDeepContext(name)) {
      f_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    }
  }
  if (pieces.resource_callbacks && ok_) {
    for (CUpti_CallbackId cbid :
         {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
          CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED,
          CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING}) {
      f_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid);
    }
  }
  for (const ActivityAttribute& setting : attributes_) {
    ok_ = ok_ && SetAttribute(setting.attribute, setting.value, setting.bytes);
  }
  if (!kinds_.empty()) {
    ok_ = ok_ && f_.activity_register_callbacks(&RequestBuffer, &CompleteBuffer) ==
                     CUPTI_SUCCESS;
    for (CUpti_ActivityKind kind : kinds_) {
      ok_ = ok_ && f_.activity_enable(kind) == CUPTI_SUCCESS;
    }
  }
}

CuptiSetup::~CuptiSetup() {
  for (CUpti_ActivityKind kind : kinds_) f_.activity_disable(kind);
  if (!kinds_.empty()) f_.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (subscriber_ != nullptr) f_.unsubscribe(subscriber_);
  // Before the detach: after it, a call into CUPTI would attach it again.
  for (const ActivityAttribute& setting : attributes_) {
    SetAttribute(setting.attribute, setting.restore, setting.bytes);
  }
  if (detach_) f_.finalize();
}

bool CuptiSetup::SetAttribute(CUpti_ActivityAttribute attribute, size_t value,
                              size_t bytes) {
  if (f_.activity_set_attribute == nullptr) return false;
  // uint8_t attributes take one byte, size_t ones the whole value.
  uint8_t flag = static_cast<uint8_t>(value);
  size_t size = bytes;
  void* data = bytes == 1 ? static_cast<void*>(&flag) : static_cast<void*>(&value);
  return f_.activity_set_attribute(attribute, &size, data) == CUPTI_SUCCESS;
}

}  // namespace deepcontext::bench
