// A fake CUPTI for CPU tests of the GPU backend: the entry points the
// backend calls (CuptiFunctions, handed over with
// CuptiLibrary::FromFunctions) over one process-wide state that tests set
// up and inspect. Like the real one it holds one subscriber, drops the
// subscription and everything enabled when finalized, and calls the
// subscriber for the driver calls whose callbacks are on.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "runtime/cupti/cupti_functions.h"

namespace deepcontext::cupti::fake {

struct FakeCuptiState {
  std::mutex mutex;  // guards what follows
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  bool subscribed = false;
  // Another client holds the subscription: subscribing fails.
  bool other_client = false;
  // What enabling CONCURRENT_KERNEL returns (another client's settings can
  // exclude it).
  CUptiResult kernel_kind_result = CUPTI_SUCCESS;
  std::set<CUpti_CallbackId> driver_callbacks;
  std::set<CUpti_CallbackId> nvtx_callbacks;
  std::set<int> kinds;
  CUpti_BuffersCallbackRequestFunc request_buffer = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete_buffer = nullptr;
  // Kernel records not handed over yet: finished ones go with the next
  // flush; those of kernels still running only with a forced flush or the
  // detach, where CUPTI waits for the work in flight.
  std::vector<CUpti_ActivityKernel10> finished;
  std::vector<CUpti_ActivityKernel10> running;
  // CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER as last set; -1: never.
  int cleared_buffers_attribute = -1;
  // Buffers the client handed over with a byte that was not zero.
  int uncleared_buffers = 0;
  int calls = 0;  // every entry point but the version and name queries
  int subscribes = 0;
  int unsubscribes = 0;
  int finalizes = 0;
  std::thread::id finalized_on;
};

// The state the entry points use; ResetFakeCupti() starts a fresh one.
FakeCuptiState& FakeCupti();
void ResetFakeCupti();
CuptiFunctions FakeCuptiFunctions();

int FakeCuptiCalls();
// Whether the driver call `cbid` is traced now (subscribed, callback on).
bool FakeCuptiTraces(CUpti_CallbackId cbid);
// What CUPTI does at the exit of driver call `cbid` made on the calling
// thread: calls the subscriber if that callback is on.
void FakeCuptiCallExit(CUpti_CallbackId cbid);
// An NVTX call on the calling thread (CUPTI as the NVTX injection): calls
// the subscriber if that callback is on.
void FakeCuptiNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData& data);
// A whole cuLaunchKernel on the calling thread (entry and exit callbacks,
// when traced) with CUPTI's `correlation_id` and, when given, the kernel's
// (mangled) name as CUPTI's symbolName.
void FakeCuptiLaunch(uint32_t correlation_id, const char* symbol_name = nullptr);
// The record of the kernel that launch ran on device 0, from `start_ns` to
// `end_ns`; `running`: the kernel has not finished yet; `graph_node_id`:
// the CUDA graph node it ran as (0: none).
void FakeCuptiKernelRecord(uint32_t correlation_id, uint64_t start_ns, uint64_t end_ns,
                           bool running = false, uint64_t graph_node_id = 0);

}  // namespace deepcontext::cupti::fake
