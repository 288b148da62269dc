// NVTX calls as CUPTI's NVTX callbacks hand them to the fake CUPTI's
// subscriber: for backend tests that follow XLA's ranges (domain "TSL").
#pragma once

#include <cupti.h>
#include <generated_nvtx_meta.h>

#include <cstdint>

#include "tests/unit/runtime/cupti/fake_cupti.h"

namespace deepcontext::cupti::fake {

// nvtxDomainCreateA(name), answered with the handle `handle_value`.
inline nvtxDomainHandle_t FakeNvtxCreateDomain(const char* name, uintptr_t handle_value) {
  nvtxDomainCreateA_params params{name};
  auto handle = reinterpret_cast<nvtxDomainHandle_t>(handle_value);
  CUpti_NvtxData data{"nvtxDomainCreateA", &params, &handle};
  FakeCuptiNvtx(CUPTI_CBID_NVTX_nvtxDomainCreateA, data);
  return handle;
}

// nvtxDomainRegisterStringA(domain, text), answered with the handle `value`.
inline nvtxStringHandle_t FakeNvtxRegister(nvtxDomainHandle_t domain, const char* text,
                                           uintptr_t value) {
  nvtxDomainRegisterStringA_params params{domain, text};
  auto handle = reinterpret_cast<nvtxStringHandle_t>(value);
  CUpti_NvtxData data{"nvtxDomainRegisterStringA", &params, &handle};
  FakeCuptiNvtx(CUPTI_CBID_NVTX_nvtxDomainRegisterStringA, data);
  return handle;
}

inline void FakeNvtxPush(nvtxDomainHandle_t domain, const nvtxEventAttributes_t& attributes) {
  nvtxDomainRangePushEx_params params{domain, {&attributes}};
  int result = 0;
  CUpti_NvtxData data{"nvtxDomainRangePushEx", &params, &result};
  FakeCuptiNvtx(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, data);
}

inline void FakeNvtxPop(nvtxDomainHandle_t domain) {
  nvtxDomainRangePop_params params{domain};
  int result = 0;
  CUpti_NvtxData data{"nvtxDomainRangePop", &params, &result};
  FakeCuptiNvtx(CUPTI_CBID_NVTX_nvtxDomainRangePop, data);
}

// Event attributes whose message is `text`.
inline nvtxEventAttributes_t NvtxAscii(const char* text) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = text;
  return a;
}

// Event attributes whose message is a registered string.
inline nvtxEventAttributes_t NvtxRegistered(nvtxStringHandle_t handle) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = handle;
  return a;
}

}  // namespace deepcontext::cupti::fake
