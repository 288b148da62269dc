// The GPU backend between trace windows (runtime/cupti/window_pause.cc),
// driven through a fake CUPTI (the entry points below, handed over with
// CuptiLibrary::FromFunctions) and the fake driver: which CUPTI calls a
// pause, a detach and the next window make, on which thread, and what the
// profile's metadata says, without a GPU.
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "runtime/cupti/cupti_functions.h"
#include "runtime/cupti/cupti_loader.h"
#include "runtime/cupti/gpu_backend_state.h"
#include "runtime/profiler/metric_store.h"

namespace deepcontext::cupti {
namespace {

// One CUPTI for the process, as the real one: subscription, enabled
// callbacks and activity kinds, and what was called.
struct FakeCupti {
  std::mutex mutex;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  bool subscribed = false;
  // Another client holds the subscription: subscribing fails.
  bool other_client = false;
  std::set<CUpti_CallbackId> driver_callbacks;
  std::set<int> kinds;
  int calls = 0;
  int subscribes = 0;
  int finalizes = 0;
  std::thread::id finalized_on;
};
FakeCupti* g_cupti = nullptr;

void Count() {
  std::lock_guard<std::mutex> guard(g_cupti->mutex);
  ++g_cupti->calls;
}

int Calls() {
  std::lock_guard<std::mutex> guard(g_cupti->mutex);
  return g_cupti->calls;
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
  std::lock_guard<std::mutex> guard(g_cupti->mutex);
  if (g_cupti->other_client || g_cupti->subscribed) {
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  g_cupti->subscribed = true;
  g_cupti->callback = callback;
  g_cupti->userdata = userdata;
  ++g_cupti->subscribes;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(uintptr_t{0x5});
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Unsubscribe(CUpti_SubscriberHandle) {
  Count();
  std::lock_guard<std::mutex> guard(g_cupti->mutex);
  g_cupti->subscribed = false;
  g_cupti->driver_callbacks.clear();
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI EnableDomain(uint32_t enable, CUpti_SubscriberHandle,
                                  CUpti_CallbackDomain domain) {
  Count();
  std::lock_guard<std::mutex> guard(g_cupti->mutex);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && enable == 0) {
    g_cupti->driver_callbacks.clear();
  }
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI EnableCallback(uint32_t enable, CUpti_SubscriberHandle,
                                    CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  Count();
  std::lock_guard<std::mutex> guard(g_cupti->mutex);
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return CUPTI_SUCCESS;
  if (enable != 0) {
    g_cupti->driver_callbacks.insert(cbid);
  } else {
    g_cupti->driver_callbacks.erase(cbid);
  }
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI ActivityEnable(CUpti_ActivityKind kind) {
  Count();
  std::lock_guard<std::mutex> guard(g_cupti->mutex);
  g_cupti->kinds.insert(kind);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI ActivityDisable(CUpti_ActivityKind kind) {
  Count();
  std::lock_guard<std::mutex> guard(g_cupti->mutex);
  g_cupti->kinds.erase(kind);
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
      return CUPTI_SUCCESS;
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
      *name = "cuCtxSynchronize";
      return CUPTI_SUCCESS;
    default:
      *name = "cuOtherCall";
      return CUPTI_SUCCESS;
  }
}
CUptiResult CUPTIAPI GetGraphNodeId(CUgraphNode, uint64_t* id) {
  *id = 0;
  return CUPTI_ERROR_INVALID_PARAMETER;
}
CUptiResult CUPTIAPI Finalize() {
  Count();
  std::lock_guard<std::mutex> guard(g_cupti->mutex);
  // Detached: the subscription and everything enabled are gone.
  ++g_cupti->finalizes;
  g_cupti->finalized_on = std::this_thread::get_id();
  g_cupti->subscribed = false;
  g_cupti->driver_callbacks.clear();
  g_cupti->kinds.clear();
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI GetTimestamp(uint64_t* timestamp) {
  Count();
  *timestamp = 1'000'000;
  return CUPTI_SUCCESS;
}

CuptiFunctions FakeFunctions() {
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

std::string Value(const std::vector<std::pair<std::string, std::string>>& metadata,
                  const std::string& key) {
  for (const auto& [name, value] : metadata) {
    if (name == key) return value;
  }
  return "";
}

class WindowPauseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cupti_ = std::make_unique<FakeCupti>();
    g_cupti = cupti_.get();
    library_ = CuptiLibrary::FromFunctions(FakeFunctions(), 130001, "fake-cupti");
    setenv("DEEPCONTEXT_CUDA_DRIVER", DEEPCONTEXT_FAKE_CUDA_DRIVER, 1);
    unsetenv("DEEPCONTEXT_CUPTI_DETACH");
    std::string error;
    std::unique_ptr<CudaDriver> driver = CudaDriver::Load(&error);
    ASSERT_NE(driver, nullptr) << error;
    fake_driver_ = dlopen(DEEPCONTEXT_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(fake_driver_, nullptr);
    // Device 0 is in use, its context current on this thread: a wait for
    // the GPU would be counted.
    reinterpret_cast<void (*)(int, int)>(dlsym(fake_driver_, "fake_cuda_set_primary_active"))(0, 1);
    primary_ = reinterpret_cast<CUcontext (*)(int)>(dlsym(fake_driver_, "fake_cuda_primary_context"))(0);
    reinterpret_cast<void (*)(CUcontext)>(dlsym(fake_driver_, "fake_cuda_set_current_context"))(primary_);
    state_ = std::make_unique<GpuBackendState>(store_, *library_, std::move(driver));
    ASSERT_EQ(state_->Start(), "");
  }

  void TearDown() override {
    state_.reset();
    reinterpret_cast<void (*)(CUcontext)>(dlsym(fake_driver_, "fake_cuda_set_current_context"))(nullptr);
    reinterpret_cast<void (*)(int, int)>(dlsym(fake_driver_, "fake_cuda_set_primary_active"))(0, 0);
    dlclose(fake_driver_);
    unsetenv("DEEPCONTEXT_CUDA_DRIVER");
    unsetenv("DEEPCONTEXT_CUPTI_DETACH");
    g_cupti = nullptr;
  }

  int Waits() {
    return reinterpret_cast<int (*)(CUcontext)>(dlsym(fake_driver_, "fake_cuda_synchronize_count"))(primary_);
  }

  // What CUPTI does for the exit of a driver call `cbid` an application
  // thread makes: calls the subscriber if that callback is enabled.
  static void CallExits(CUpti_CallbackId cbid) {
    CUpti_CallbackFunc callback = nullptr;
    void* userdata = nullptr;
    {
      std::lock_guard<std::mutex> guard(g_cupti->mutex);
      if (!g_cupti->subscribed || g_cupti->driver_callbacks.count(cbid) == 0) return;
      callback = g_cupti->callback;
      userdata = g_cupti->userdata;
    }
    CUpti_CallbackData data{};
    data.callbackSite = CUPTI_API_EXIT;
    data.functionName = "cuLaunchKernel";
    callback(userdata, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
  }

  // A CUDA call made on another thread, as the program's would be.
  static std::thread::id CallOnAnotherThread() {
    std::thread::id id;
    std::thread thread([&id] {
      id = std::this_thread::get_id();
      CallExits(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
    });
    thread.join();
    return id;
  }

  bool LaunchesTraced() {
    std::lock_guard<std::mutex> guard(g_cupti->mutex);
    return g_cupti->driver_callbacks.count(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) != 0;
  }

  std::unique_ptr<FakeCupti> cupti_;
  std::unique_ptr<CuptiLibrary> library_;
  void* fake_driver_ = nullptr;
  CUcontext primary_ = nullptr;
  profiler::MetricStore store_;
  std::unique_ptr<GpuBackendState> state_;
};

constexpr int64_t kLongPauseNs = 100'000'000;
constexpr int64_t kShortPauseNs = 5'000'000;

// A context synchronization while another thread captures a CUDA graph
// invalidates the capture, so a pause never waits for the GPU; the detach
// happens at the exit of the next traced call, on the thread making it.
TEST_F(WindowPauseTest, ALongPauseDetachesAtTheNextCallsExitWithoutWaitingForTheGpu) {
  state_->SetShortestPause(kLongPauseNs);
  const int waits = Waits();
  state_->SetTracing(false);
  EXPECT_EQ(Waits(), waits);
  EXPECT_TRUE(cupti_->kinds.empty());
  EXPECT_EQ(cupti_->finalizes, 0);
  // The launch callbacks come back on, only to detach.
  ASSERT_TRUE(LaunchesTraced());
  const std::thread::id caller = CallOnAnotherThread();
  EXPECT_EQ(cupti_->finalizes, 1);
  EXPECT_EQ(cupti_->finalized_on, caller);
  // A later call in the pause finds CUPTI gone.
  CallOnAnotherThread();
  EXPECT_EQ(cupti_->finalizes, 1);

  state_->SetTracing(true);
  EXPECT_EQ(cupti_->subscribes, 2);
  EXPECT_TRUE(cupti_->subscribed);
  EXPECT_TRUE(LaunchesTraced());
  EXPECT_TRUE(cupti_->kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  const auto metadata = state_->Metadata();
  EXPECT_EQ(Value(metadata, "gpu_window_detaches"), "1");
  EXPECT_EQ(Value(metadata, "gpu_window_error"), "");
  EXPECT_EQ(Waits(), waits);
}

TEST_F(WindowPauseTest, APauseWithoutCallsCallsTheDetachOff) {
  state_->SetShortestPause(kLongPauseNs);
  state_->SetTracing(false);
  state_->SetTracing(true);
  EXPECT_EQ(cupti_->finalizes, 0);
  EXPECT_EQ(cupti_->subscribes, 1);
  EXPECT_TRUE(LaunchesTraced());
  EXPECT_TRUE(cupti_->kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  EXPECT_EQ(Value(state_->Metadata(), "gpu_window_detach_called_off"), "1");
}

TEST_F(WindowPauseTest, ShortPausesKeepCuptiAttachedWithItsCallbacksOff) {
  state_->SetShortestPause(kShortPauseNs);
  state_->SetTracing(false);
  EXPECT_FALSE(LaunchesTraced());
  EXPECT_TRUE(cupti_->kinds.empty());
  CallOnAnotherThread();
  state_->SetTracing(true);
  EXPECT_EQ(cupti_->finalizes, 0);
  EXPECT_EQ(cupti_->subscribes, 1);
  EXPECT_TRUE(LaunchesTraced());
  EXPECT_EQ(Value(state_->Metadata(), "gpu_window_detaches"), "");
}

TEST_F(WindowPauseTest, TheSettingKeepsCuptiAttachedBetweenWindows) {
  setenv("DEEPCONTEXT_CUPTI_DETACH", "0", 1);
  state_->SetShortestPause(kLongPauseNs);
  state_->SetTracing(false);
  CallOnAnotherThread();
  state_->SetTracing(true);
  EXPECT_EQ(cupti_->finalizes, 0);
  EXPECT_EQ(cupti_->subscribes, 1);
}

// torch.profiler subscribed while CUPTI was detached: the next window
// cannot attach, GPU tracing ends with a warning, and CUPTI is left to the
// other client: not one more call, no detach at stop.
TEST_F(WindowPauseTest, AClientThatSubscribedInThePauseKeepsCupti) {
  state_->SetShortestPause(kLongPauseNs);
  state_->SetTracing(false);
  CallOnAnotherThread();
  ASSERT_EQ(cupti_->finalizes, 1);
  cupti_->other_client = true;
  state_->SetTracing(true);
  const auto metadata = state_->Metadata();
  EXPECT_NE(Value(metadata, "gpu_window_error").find("another CUPTI client"), std::string::npos)
      << Value(metadata, "gpu_window_error");
  const int calls = Calls();
  state_->SetTracing(false);
  state_->SetTracing(true);
  state_->Flush();
  state_->Metadata();
  state_.reset();  // Stop and the detach at stop
  EXPECT_EQ(Calls(), calls);
  EXPECT_EQ(cupti_->finalizes, 1);
}

}  // namespace
}  // namespace deepcontext::cupti
