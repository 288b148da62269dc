// XLA's ranges in NVTX domain "TSL" name the module, HLO instruction or
// compilation a GPU call belongs to (runtime/xla/xla_ranges.h). They reach
// the backend one of two ways, both on application threads inside the NVTX
// call:
//  - the runtime library as the process's NVTX tool (NVTX_INJECTION64_PATH
//    names it; InitializeInjectionNvtx2 below): NVTX calls the four
//    functions XLA uses directly, a registered string's handle is its parsed
//    annotation, and nothing else is done per range;
//  - CUPTI as the NVTX tool and its NVTX callbacks (OnNvtx), for
//    DEEPCONTEXT_XLA_NVTX=cupti. CUPTI's own handling of every range then
//    comes on top.
#include <cstdint>
#include <cstring>
#include <ctime>

#include <generated_nvtx_meta.h>

#include "deepcontext/dlmonitor.h"
#include "runtime/common/deliberate_leak.h"
#include "runtime/cupti/gpu_backend_state.h"
#include "runtime/cupti/nvtx_injection.h"

namespace deepcontext::cupti {
namespace {

uint64_t Handle(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer); }

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// ---- The runtime as the NVTX tool ----

// A domain handle: only XLA's ("TSL") ranges are followed.
struct NvtxDomain {
  bool followed = false;
};

// The tracker ranges go to while a backend runs. A call holds it for its
// duration (in_flight), so that a stopping backend can wait for the calls
// that still use it.
std::atomic<xla::XlaRanges*> g_target{nullptr};
std::atomic<int> g_in_flight{0};
std::atomic<bool> g_injected{false};

class HeldTarget {
 public:
  HeldTarget() {
    g_in_flight.fetch_add(1, std::memory_order_acq_rel);
    ranges_ = g_target.load(std::memory_order_acquire);
  }
  ~HeldTarget() { g_in_flight.fetch_sub(1, std::memory_order_acq_rel); }
  HeldTarget(const HeldTarget&) = delete;
  HeldTarget& operator=(const HeldTarget&) = delete;
  xla::XlaRanges* get() const { return ranges_; }

 private:
  xla::XlaRanges* ranges_ = nullptr;
};

void BeginCompileHere(xla::XlaRanges& ranges) {
  // The Python line whose call is being compiled: compiler and autotuning
  // threads credit their GPU work to it.
  gpu::ContextId context = 0;
  if (dlmonitor_context_current(&context) == DLMONITOR_OK) ranges.BeginCompile(context);
}

// Handles live as long as the process: NVTX never says when they are unused.
nvtxDomainHandle_t NVTX_API ToolDomainCreateA(const char* name) {
  auto* domain = new NvtxDomain;
  domain->followed = name != nullptr && std::strcmp(name, "TSL") == 0;
  MarkDeliberatelyLeaked(domain);
  return reinterpret_cast<nvtxDomainHandle_t>(domain);
}

nvtxStringHandle_t NVTX_API ToolDomainRegisterStringA(nvtxDomainHandle_t domain,
                                                      const char* text) {
  const auto* owner = reinterpret_cast<const NvtxDomain*>(domain);
  // Other domains' strings are never parsed: they are never followed.
  auto* string = new xla::RegisteredString(
      owner != nullptr && owner->followed && text != nullptr ? text : "");
  MarkDeliberatelyLeaked(string);
  return reinterpret_cast<nvtxStringHandle_t>(string);
}

int NVTX_API ToolDomainRangePushEx(nvtxDomainHandle_t domain,
                                   const nvtxEventAttributes_t* attributes) {
  const auto* owner = reinterpret_cast<const NvtxDomain*>(domain);
  if (owner == nullptr || !owner->followed) return 0;
  HeldTarget target;
  xla::XlaRanges* ranges = target.get();
  if (ranges == nullptr) return 0;
  const uint64_t start = ranges->stats_timed() ? NowNs() : 0;
  bool opened_compile = false;
  if (attributes != nullptr && attributes->messageType == NVTX_MESSAGE_TYPE_REGISTERED &&
      attributes->message.registered != nullptr) {
    opened_compile = ranges->PushString(
        *reinterpret_cast<const xla::RegisteredString*>(attributes->message.registered));
  } else if (attributes != nullptr && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII &&
             attributes->message.ascii != nullptr) {
    opened_compile = ranges->PushAscii(attributes->message.ascii);
  } else {
    opened_compile = ranges->PushAscii("");
  }
  if (opened_compile) BeginCompileHere(*ranges);
  if (start != 0) ranges->AddNvtxNs(NowNs() - start);
  return 0;
}

int NVTX_API ToolDomainRangePop(nvtxDomainHandle_t domain) {
  const auto* owner = reinterpret_cast<const NvtxDomain*>(domain);
  if (owner == nullptr || !owner->followed) return 0;
  HeldTarget target;
  xla::XlaRanges* ranges = target.get();
  if (ranges == nullptr) return 0;
  const uint64_t start = ranges->stats_timed() ? NowNs() : 0;
  ranges->PopRange();
  if (start != 0) ranges->AddNvtxNs(NowNs() - start);
  return 0;
}

}  // namespace

void SetNvtxToolTarget(xla::XlaRanges* ranges) {
  g_target.store(ranges, std::memory_order_release);
  if (ranges != nullptr) return;
  // Calls that loaded the old tracker finish before it may go away. Not
  // forever: a child forked while another thread was inside a call keeps
  // that thread's count.
  for (int i = 0; i < 5000 && g_in_flight.load(std::memory_order_acquire) != 0; ++i) {
    timespec pause{0, 20000};
    nanosleep(&pause, nullptr);
  }
}

void ReleaseNvtxToolTarget(const xla::XlaRanges* ranges) {
  if (g_target.load(std::memory_order_acquire) == ranges) SetNvtxToolTarget(nullptr);
}

bool NvtxToolInjected() { return g_injected.load(std::memory_order_acquire); }

int InstallNvtxTool(NvtxGetExportTableFunc_t get_export_table) {
  if (get_export_table == nullptr) return 0;
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int last = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &last) == 0 ||
      table == nullptr) {
    return 0;
  }
  const auto install = [&](unsigned int id, NvtxFunctionPointer function) {
    if (id <= last && table[id] != nullptr) *table[id] = function;
  };
  // Every other NVTX function stays a no-op.
  install(NVTX_CBID_CORE2_DomainCreateA, reinterpret_cast<NvtxFunctionPointer>(&ToolDomainCreateA));
  install(NVTX_CBID_CORE2_DomainRegisterStringA,
          reinterpret_cast<NvtxFunctionPointer>(&ToolDomainRegisterStringA));
  install(NVTX_CBID_CORE2_DomainRangePushEx,
          reinterpret_cast<NvtxFunctionPointer>(&ToolDomainRangePushEx));
  install(NVTX_CBID_CORE2_DomainRangePop, reinterpret_cast<NvtxFunctionPointer>(&ToolDomainRangePop));
  g_injected.store(true, std::memory_order_release);
  return 1;
}

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
  if (xla_ranges_.stats_timed()) {
    const uint64_t start = NowNs();
    HandleNvtx(cbid, *nvtx);
    xla_ranges_.AddNvtxNs(NowNs() - start);
    return;
  }
  HandleNvtx(cbid, *nvtx);
}

void GpuBackendState::HandleNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData& data) {
  const auto* nvtx = &data;
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
      if (opened_compile) BeginCompileHere(xla_ranges_);
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

// NVTX looks this up in the library NVTX_INJECTION64_PATH names.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  return deepcontext::cupti::InstallNvtxTool(get_export_table);
}
