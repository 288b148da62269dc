// The GPU backend between trace windows (runtime/cupti/window_pause.cc),
// driven through the fake CUPTI and driver (fake_backend_test.h): which
// CUPTI calls a pause, a detach and the next window make, on which thread,
// and what the profile's metadata says.
#include <cupti.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <thread>

#include "tests/unit/runtime/cupti/fake_backend_test.h"
#include "tests/unit/runtime/cupti/fake_cupti.h"

namespace deepcontext::cupti::fake {
namespace {

class WindowPauseTest : public FakeBackendTest {
 protected:
  void SetUp() override {
    FakeBackendTest::SetUp();
    MakeState();
    ASSERT_TRUE(IsOk(state_->Start()));
  }

  // A CUDA call made on another thread, as the program's would be.
  static std::thread::id CallOnAnotherThread() {
    std::thread::id id;
    std::thread thread([&id] {
      id = std::this_thread::get_id();
      FakeCuptiCallExit(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
    });
    thread.join();
    return id;
  }

  static bool LaunchesTraced() { return FakeCuptiTraces(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel); }
};

constexpr int64_t kLongPauseNs = 100'000'000;
constexpr int64_t kShortPauseNs = 5'000'000;

// A context synchronization while another thread captures a CUDA graph
// invalidates the capture, so a pause never waits for the GPU; the detach
// happens at the exit of the next traced call, on the thread making it.
TEST_F(WindowPauseTest, ALongPauseDetachesAtTheNextCallsExitWithoutWaitingForTheGpu) {
  state_->SetShortestPause(kLongPauseNs);
  const int waits = GpuWaits();
  state_->SetTracing(false);
  EXPECT_EQ(GpuWaits(), waits);
  EXPECT_TRUE(FakeCupti().kinds.empty());
  EXPECT_EQ(FakeCupti().finalizes, 0);
  // The launch callbacks come back on, only to detach.
  ASSERT_TRUE(LaunchesTraced());
  const std::thread::id caller = CallOnAnotherThread();
  EXPECT_EQ(FakeCupti().finalizes, 1);
  EXPECT_EQ(FakeCupti().finalized_on, caller);
  // A later call in the pause finds CUPTI gone.
  CallOnAnotherThread();
  EXPECT_EQ(FakeCupti().finalizes, 1);

  state_->SetTracing(true);
  EXPECT_EQ(FakeCupti().subscribes, 2);
  EXPECT_TRUE(FakeCupti().subscribed);
  EXPECT_TRUE(LaunchesTraced());
  EXPECT_TRUE(FakeCupti().kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  const auto metadata = state_->Metadata();
  EXPECT_EQ(Value(metadata, "gpu_window_detaches"), "1");
  EXPECT_EQ(Value(metadata, "gpu_window_error"), "");
  EXPECT_EQ(GpuWaits(), waits);
}

// The pause does not wait for the window's kernels: their records come
// with the detach, and count.
TEST_F(WindowPauseTest, RecordsOfKernelsRunningAtThePauseArriveWithTheDetach) {
  state_->SetShortestPause(kLongPauseNs);
  FakeCuptiLaunch(7);
  FakeCuptiKernelRecord(7, 1'000, 4'000, /*running=*/true);
  state_->SetTracing(false);
  CallOnAnotherThread();
  ASSERT_EQ(FakeCupti().finalizes, 1);
  state_->SetTracing(true);
  state_->Stop();
  EXPECT_EQ(Total("gpu_time").count, 1u);
  EXPECT_EQ(Total("gpu_time").sum, 3'000);
  const auto metadata = state_->Metadata();
  EXPECT_EQ(Value(metadata, "gpu_records"), "1");
  EXPECT_EQ(Value(metadata, "gpu_unattributed_records"), "0");
  EXPECT_EQ(Value(metadata, "gpu_launches_without_records"), "");
}

TEST_F(WindowPauseTest, APauseWithoutCallsCallsTheDetachOff) {
  state_->SetShortestPause(kLongPauseNs);
  state_->SetTracing(false);
  state_->SetTracing(true);
  EXPECT_EQ(FakeCupti().finalizes, 0);
  EXPECT_EQ(FakeCupti().subscribes, 1);
  EXPECT_TRUE(LaunchesTraced());
  EXPECT_TRUE(FakeCupti().kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  EXPECT_EQ(Value(state_->Metadata(), "gpu_window_detach_called_off"), "1");
}

TEST_F(WindowPauseTest, ShortPausesKeepCuptiAttachedWithItsCallbacksOff) {
  state_->SetShortestPause(kShortPauseNs);
  state_->SetTracing(false);
  EXPECT_FALSE(LaunchesTraced());
  EXPECT_TRUE(FakeCupti().kinds.empty());
  CallOnAnotherThread();
  state_->SetTracing(true);
  EXPECT_EQ(FakeCupti().finalizes, 0);
  EXPECT_EQ(FakeCupti().subscribes, 1);
  EXPECT_TRUE(LaunchesTraced());
  EXPECT_EQ(Value(state_->Metadata(), "gpu_window_detaches"), "");
}

TEST_F(WindowPauseTest, TheSettingKeepsCuptiAttachedBetweenWindows) {
  setenv("DEEPCONTEXT_CUPTI_DETACH", "0", 1);
  state_->SetShortestPause(kLongPauseNs);
  state_->SetTracing(false);
  CallOnAnotherThread();
  state_->SetTracing(true);
  EXPECT_EQ(FakeCupti().finalizes, 0);
  EXPECT_EQ(FakeCupti().subscribes, 1);
}

// torch.profiler subscribed while CUPTI was detached: the next window
// cannot attach, GPU tracing ends with a warning, and CUPTI is left to the
// other client: not one more call, no detach at stop.
TEST_F(WindowPauseTest, AClientThatSubscribedInThePauseKeepsCupti) {
  state_->SetShortestPause(kLongPauseNs);
  state_->SetTracing(false);
  CallOnAnotherThread();
  ASSERT_EQ(FakeCupti().finalizes, 1);
  FakeCupti().other_client = true;
  state_->SetTracing(true);
  const auto metadata = state_->Metadata();
  EXPECT_NE(Value(metadata, "gpu_window_error").find("another CUPTI client"), std::string::npos)
      << Value(metadata, "gpu_window_error");
  const int calls = FakeCuptiCalls();
  state_->SetTracing(false);
  state_->SetTracing(true);
  state_->Flush();
  state_->Metadata();
  state_.reset();  // Stop and the detach at stop
  EXPECT_EQ(FakeCuptiCalls(), calls);
  EXPECT_EQ(FakeCupti().finalizes, 1);
}

}  // namespace
}  // namespace deepcontext::cupti::fake
