// CUPTI's NVTX callbacks (CUPTI as the process's NVTX injection): XLA's
// ranges in domain "TSL" name the module, HLO instruction or compilation a
// GPU call belongs to (runtime/xla/xla_ranges.h). Runs on application
// threads, inside the NVTX call.
#include <cstdint>

#include <generated_nvtx_meta.h>

#include "deepcontext/dlmonitor.h"
#include "runtime/cupti/gpu_backend_state.h"

namespace deepcontext::cupti {
namespace {

uint64_t Handle(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer); }

}  // namespace

// The calls XLA makes (measured, JAX 0.11.2): nvtxDomainCreateA once,
// nvtxDomainRegisterStringA for module and instruction names,
// nvtxDomainRangePushEx / nvtxDomainRangePop around each.
const CUpti_CallbackId kNvtxCallbacks[] = {
    CUPTI_CBID_NVTX_nvtxDomainCreateA, CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
    CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangePop};
const size_t kNvtxCallbackCount = sizeof(kNvtxCallbacks) / sizeof(kNvtxCallbacks[0]);

bool IsThreadRootContext(gpu::ContextId context) {
  dlmonitor_frame_t frame{};
  frame.struct_size = sizeof(frame);
  dlmonitor_context_t parent = 0;
  if (dlmonitor_context_frame(context, &frame, &parent) != DLMONITOR_OK) return false;
  return frame.kind == DLMONITOR_FRAME_THREAD;
}

void GpuBackendState::OnNvtx(CUpti_CallbackId cbid, const void* data) {
  const auto* nvtx = static_cast<const CUpti_NvtxData*>(data);
  if (nvtx == nullptr || nvtx->functionParams == nullptr) return;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxDomainCreateA: {
      const auto* p = static_cast<const nvtxDomainCreateA_params*>(nvtx->functionParams);
      const auto* domain = static_cast<const nvtxDomainHandle_t*>(nvtx->functionReturnValue);
      if (p->name != nullptr && domain != nullptr) {
        xla_ranges_.OnDomainCreated(Handle(*domain), p->name);
      }
      return;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA: {
      const auto* p =
          static_cast<const nvtxDomainRegisterStringA_params*>(nvtx->functionParams);
      const auto* handle = static_cast<const nvtxStringHandle_t*>(nvtx->functionReturnValue);
      if (p->string != nullptr && handle != nullptr && *handle != nullptr) {
        xla_ranges_.OnStringRegistered(Handle(*handle), p->string);
      }
      return;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      const auto* p = static_cast<const nvtxDomainRangePushEx_params*>(nvtx->functionParams);
      const nvtxEventAttributes_t* attributes = p->core.eventAttrib;
      bool opened_compile = false;
      if (attributes == nullptr) {
        opened_compile = xla_ranges_.Push(Handle(p->domain), "");
      } else if (attributes->messageType == NVTX_MESSAGE_TYPE_ASCII &&
                 attributes->message.ascii != nullptr) {
        opened_compile = xla_ranges_.Push(Handle(p->domain), attributes->message.ascii);
      } else if (attributes->messageType == NVTX_MESSAGE_TYPE_REGISTERED) {
        opened_compile = xla_ranges_.PushRegistered(Handle(p->domain),
                                                    Handle(attributes->message.registered));
      } else {
        opened_compile = xla_ranges_.Push(Handle(p->domain), "");
      }
      if (opened_compile) {
        // The Python line whose call is being compiled: compiler and
        // autotuning threads credit their GPU work to it.
        gpu::ContextId context = 0;
        if (dlmonitor_context_current(&context) == DLMONITOR_OK) {
          xla_ranges_.BeginCompile(context);
        }
      }
      return;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePop: {
      const auto* p = static_cast<const nvtxDomainRangePop_params*>(nvtx->functionParams);
      xla_ranges_.Pop(Handle(p->domain));
      return;
    }
    default:
      return;
  }
}

}  // namespace deepcontext::cupti
