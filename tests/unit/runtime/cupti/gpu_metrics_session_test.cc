// The range profiler session's lifecycle, through the replayed CUPTI of
// fake_range_profiler.h: the profiler is initialized once for all contexts,
// and a stopped session measures nothing more.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cupti/gpu_metrics_functions.h"
#include "runtime/cupti/gpu_metrics_session.h"
#include "tests/unit/runtime/cupti/fake_range_profiler.h"
#include "tests/unit/scratch_dir.h"

namespace deepcontext::cupti {
namespace {

class RangeProfilerSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    InstallFakeRangeProfiler(&fake_);
    LoadMetricsFixture(fake_);
    functions_ = FakeFunctions();
    fake_.running = "copy_kernel";
  }
  void TearDown() override { InstallFakeRangeProfiler(nullptr); }

  int Calls(const std::string& name) const {
    return static_cast<int>(std::count(fake_.calls.begin(), fake_.calls.end(), name));
  }
  // One launch in `context`, measured from Begin to End.
  Status Measure(RangeProfilerSession& session, void* context) {
    if (Status begun = session.Begin(context); !begun.ok()) return begun;
    gpu::KernelCounterValues values;
    return session.End(context, &values);
  }

  FakeRangeProfiler fake_;
  GpuMetricsFunctions functions_;
  void* first_ = reinterpret_cast<void*>(0x1000);
  void* second_ = reinterpret_cast<void*>(0x2000);
};

TEST_F(RangeProfilerSessionTest, InitializesTheProfilerOnceForEveryContext) {
  RangeProfilerSession session(functions_);
  ASSERT_TRUE(Measure(session, first_).ok());
  fake_.config = {};  // the fake's profiler of the first context, out of the way
  ASSERT_TRUE(Measure(session, second_).ok());
  ASSERT_TRUE(Measure(session, first_).ok());
  EXPECT_EQ(Calls("Initialize"), 1);
  EXPECT_EQ(Calls("Enable"), 2);
  EXPECT_EQ(Calls("Start"), 3);
  session.Stop();
  EXPECT_EQ(Calls("Disable"), 2);
}

TEST_F(RangeProfilerSessionTest, AStoppedSessionRefusesLaunchesAndStopsOnce) {
  RangeProfilerSession session(functions_);
  ASSERT_TRUE(Measure(session, first_).ok());
  session.Stop();
  const std::vector<std::string> after_stop = fake_.calls;
  const Status refused = session.Begin(first_);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(), "stopped");
  // A new context is not enabled either, and a second Stop undoes nothing.
  EXPECT_FALSE(session.Begin(second_).ok());
  session.Stop();
  EXPECT_EQ(fake_.calls, after_stop);
}

TEST_F(RangeProfilerSessionTest, StoppedBeforeAnyLaunchItNeverInitializes) {
  RangeProfilerSession session(functions_);
  session.Stop();
  EXPECT_FALSE(session.Begin(first_).ok());
  EXPECT_TRUE(fake_.calls.empty());
}

// Claims on the GPU (runtime/gpu/counter_claims.h), in a folder of their
// own; `other_` plays another process that claims the same device.
class RangeProfilerClaimTest : public RangeProfilerSessionTest {
 protected:
  void SetUp() override {
    RangeProfilerSessionTest::SetUp();
    claims_ = std::make_unique<gpu::CounterClaims>(dir_);
    other_ = std::make_unique<gpu::CounterClaims>(dir_);
  }
  gpu::ClaimDevice ClaimGpu0() {
    return [this](void*) { return claims_->Claim("GPU-0", "GPU hardware counters"); };
  }

  ScratchDir scratch_;
  const std::string dir_ = scratch_.path();
  std::unique_ptr<gpu::CounterClaims> claims_, other_;
};

TEST_F(RangeProfilerClaimTest, AGpuClaimedElsewhereIsNeverTouched) {
  auto held = other_->Claim("GPU-0", "GPU instruction samples");
  ASSERT_TRUE(held.ok());
  RangeProfilerSession session(functions_);
  session.SetClaimDevice(ClaimGpu0());
  const Status refused = session.Begin(first_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message().rfind("GPU GPU-0 is in use by pid " + std::to_string(getpid()), 0),
            0u)
      << refused.message();
  EXPECT_NE(refused.message().find(", GPU instruction samples: one process per GPU"),
            std::string::npos)
      << refused.message();
  EXPECT_TRUE(fake_.calls.empty());  // not even initialized
  EXPECT_EQ(session.StatusText(), "off: " + refused.message());
  session.Stop();
}

TEST_F(RangeProfilerClaimTest, TheGpuIsHeldFromTheFirstLaunchUntilStop) {
  RangeProfilerSession session(functions_);
  session.SetClaimDevice(ClaimGpu0());
  EXPECT_TRUE(other_->Claim("GPU-0", "GPU instruction samples").ok());  // given back at once
  ASSERT_TRUE(Measure(session, first_).ok());
  EXPECT_FALSE(other_->Claim("GPU-0", "GPU instruction samples").ok());
  session.Stop();
  EXPECT_TRUE(other_->Claim("GPU-0", "GPU instruction samples").ok());
}

TEST_F(RangeProfilerClaimTest, AnUnnamedGpuIsMeasuredAndTheStatusSaysItWasNotGuarded) {
  RangeProfilerSession session(functions_);
  session.SetClaimDevice(
      [](void*) { return gpu::CounterClaims::Unnamed("the driver gave no UUID for device 0"); });
  ASSERT_TRUE(Measure(session, first_).ok());
  session.Stop();
  EXPECT_TRUE(session.StatusText().ends_with(
      "; other processes not kept off the GPU: the driver gave no UUID for device 0)"))
      << session.StatusText();
}

}  // namespace
}  // namespace deepcontext::cupti
