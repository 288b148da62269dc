// Starting and stopping the GPU backend (runtime/cupti/gpu_backend_state.cc)
// through the fake CUPTI and driver (fake_backend_test.h): what it turns on,
// how it refuses when another client holds CUPTI, and what stopping and
// detaching do.
#include <cupti.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "runtime/cupti/cupti_copies.h"
#include "tests/unit/runtime/cupti/fake_backend_test.h"
#include "tests/unit/runtime/cupti/fake_cupti.h"
#include "tests/unit/scratch_dir.h"

namespace deepcontext::cupti::fake {
namespace {

using GpuBackendStateTest = FakeBackendTest;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(GpuBackendStateTest, StartTracesTheLaunchPathsAndEveryActivityKind) {
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  EXPECT_TRUE(FakeCupti().subscribed);
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                  CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET}) {
    EXPECT_TRUE(FakeCupti().kinds.count(kind)) << kind;
  }
  EXPECT_TRUE(FakeCuptiTraces(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  EXPECT_TRUE(FakeCuptiTraces(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize));
  EXPECT_TRUE(FakeCuptiTraces(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch));
  // Calls that launch nothing are left untraced (the fake names them
  // "cuOtherCall").
  EXPECT_FALSE(FakeCuptiTraces(CUPTI_DRIVER_TRACE_CBID_cuInit));
  EXPECT_TRUE(Has(state_->description(),
                  "tracing kernels, copies, peer copies, memsets, synchronizations; "
                  "3 driver functions traced"))
      << state_->description();
}

TEST_F(GpuBackendStateTest, AnotherClientHoldingCuptiIsNamedAndLeftAlone) {
  FakeCupti().other_client = true;
  MakeState();
  const Status started = state_->Start();
  ASSERT_FALSE(started.ok());
  const std::string& error = started.message();
  // The status line says first what the profile lacks, as for every other
  // reason the backend does not start. Beyond that it names only the CUPTI
  // files this process maps (none, unless an earlier test in the same
  // process loaded the machine's CUPTI); the fake is part of this binary.
  const std::string others = OtherCopiesNote(
      OtherCuptiCopies(LoadedCuptiCopies(), LibraryHolding(reinterpret_cast<const void*>(&Has))));
  EXPECT_EQ(error,
            "no GPU activity recorded: another CUPTI client (torch.profiler, Nsight Systems, "
            "...) is active" + others);
  EXPECT_TRUE(FakeCupti().kinds.empty());
  state_->Stop();
  state_->Detach();
  EXPECT_EQ(FakeCupti().finalizes, 0);
  EXPECT_TRUE(Has(Value(state_->Metadata(), "gpu_cupti_detach"), "another CUPTI client"));
}

// Triton bundles its own CUPTI for Proton: while Proton traces, the copy
// DeepContext uses is refused without CUPTI naming the holder.
TEST_F(GpuBackendStateTest, AnotherCopyOfCuptiInTheProcessIsNamed) {
  ScratchDir scratch;
  const std::filesystem::path copy = std::filesystem::path(scratch.path()) / "libcupti.so.98";
  std::filesystem::copy_file(DEEPCONTEXT_FAKE_LOADED_CUPTI, copy);
  void* second = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(second, nullptr) << dlerror();
  FakeCupti().other_client = true;
  MakeState();
  const Status started = state_->Start();
  ASSERT_FALSE(started.ok());
  const std::string& error = started.message();
  EXPECT_TRUE(Has(error, "another CUPTI client")) << error;
  // Listed with any other copy already mapped (see above).
  EXPECT_TRUE(Has(error, "another copy of CUPTI is loaded (")) << error;
  EXPECT_TRUE(Has(error, copy.string())) << error;
  state_->Stop();
  dlclose(second);
}

TEST_F(GpuBackendStateTest, KernelsExcludedByAnotherClientsSettingsAreReported) {
  FakeCupti().kernel_kind_result = CUPTI_ERROR_NOT_COMPATIBLE;
  MakeState();
  const Status started = state_->Start();
  ASSERT_FALSE(started.ok());
  const std::string& error = started.message();
  EXPECT_TRUE(Has(error, "CUPTI cannot trace kernels")) << error;
  EXPECT_TRUE(Has(error, "(another CUPTI client may be active)")) << error;
}

// The main path: a launch's callback maps its correlation id to the
// calling context, the kernel's record brings the GPU time there.
TEST_F(GpuBackendStateTest, ALaunchAndItsKernelRecordMeetInTheStore) {
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  FakeCuptiLaunch(42);
  FakeCuptiKernelRecord(42, 1'000, 6'000);
  state_->Flush();
  EXPECT_EQ(Total("gpu_time").count, 1u);
  EXPECT_EQ(Total("gpu_time").sum, 5'000);
  // Still running at stop: the stop's wait and forced flush bring it in.
  FakeCuptiLaunch(43);
  FakeCuptiKernelRecord(43, 7'000, 9'000, /*running=*/true);
  state_->Stop();
  EXPECT_EQ(Total("gpu_time").count, 2u);
  EXPECT_EQ(Total("gpu_time").sum, 7'000);
  const auto metadata = state_->Metadata();
  EXPECT_EQ(Value(metadata, "gpu_launches"), "2");
  EXPECT_EQ(Value(metadata, "gpu_records"), "2");
  EXPECT_EQ(Value(metadata, "gpu_unattributed_records"), "0");
}

// Stopping waits for the GPU, so that the records of kernels still running
// are complete, and lets go of CUPTI; destroying detaches it.
TEST_F(GpuBackendStateTest, StopWaitsForTheGpuThenUnsubscribesAndDetachDetaches) {
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  const int waits = GpuWaits();
  state_->Stop();
  EXPECT_EQ(GpuWaits(), waits + 1);
  EXPECT_TRUE(FakeCupti().kinds.empty());
  EXPECT_FALSE(FakeCupti().subscribed);
  EXPECT_EQ(FakeCupti().unsubscribes, 1);
  EXPECT_EQ(FakeCupti().finalizes, 0);
  state_->Detach();
  EXPECT_EQ(FakeCupti().finalizes, 1);
  EXPECT_TRUE(Has(Value(state_->Metadata(), "gpu_cupti_detach"), "at stop (cuptiFinalize)"));
  state_.reset();
  EXPECT_EQ(FakeCupti().finalizes, 1);
}

TEST_F(GpuBackendStateTest, CuptiBeforeCuda126StaysAttached) {
  MakeState(23);
  ASSERT_TRUE(IsOk(state_->Start()));
  state_.reset();
  EXPECT_EQ(FakeCupti().finalizes, 0);
}

TEST_F(GpuBackendStateTest, TheSettingKeepsCuptiAttachedAtStop) {
  setenv("DEEPCONTEXT_CUPTI_DETACH", "0", 1);
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  state_->Stop();
  EXPECT_TRUE(Has(Value(state_->Metadata(), "gpu_cupti_detach"), "DEEPCONTEXT_CUPTI_DETACH=0"));
  state_.reset();
  EXPECT_EQ(FakeCupti().finalizes, 0);
}

// CUPTI is told that its activity buffers come cleared, and they do: a
// buffer filled and handed back is cleared before it is handed out again.
TEST_F(GpuBackendStateTest, ActivityBuffersComeClearedAndCuptiIsToldSo) {
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  EXPECT_EQ(FakeCupti().cleared_buffers_attribute, 1);
  for (uint32_t id = 1; id <= 3; ++id) {
    FakeCuptiLaunch(id);
    FakeCuptiKernelRecord(id, 1'000 * id, 1'000 * id + 500);
    state_->Flush();
  }
  EXPECT_EQ(Total("gpu_time").count, 3u);
  EXPECT_EQ(FakeCupti().uncleared_buffers, 0);
  EXPECT_EQ(Value(state_->Metadata(), "gpu_activity_buffers_cleared_by"),
            "the profiler's record thread");
}

TEST_F(GpuBackendStateTest, TheSettingLeavesClearingBuffersToCupti) {
  setenv("DEEPCONTEXT_CUPTI_CLEARED_BUFFERS", "0", 1);
  MakeState();
  const Status started = state_->Start();
  unsetenv("DEEPCONTEXT_CUPTI_CLEARED_BUFFERS");
  ASSERT_TRUE(IsOk(started));
  EXPECT_EQ(FakeCupti().cleared_buffers_attribute, 0);
  EXPECT_TRUE(Has(Value(state_->Metadata(), "gpu_activity_buffers_cleared_by"),
                  "DEEPCONTEXT_CUPTI_CLEARED_BUFFERS=0"));
}

// Once a pause detached CUPTI, any CUPTI call would attach it again:
// stopping then makes none, and waits for nothing.
TEST_F(GpuBackendStateTest, StopAfterAPauseDetachedCuptiMakesNoCuptiCall) {
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  state_->SetShortestPause(100'000'000);
  state_->SetTracing(false);
  FakeCuptiCallExit(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  ASSERT_EQ(FakeCupti().finalizes, 1);
  const int calls = FakeCuptiCalls();
  const int waits = GpuWaits();
  state_->Stop();
  state_->Metadata();
  state_.reset();
  EXPECT_EQ(FakeCuptiCalls(), calls);
  EXPECT_EQ(GpuWaits(), waits);
  EXPECT_EQ(FakeCupti().finalizes, 1);
}

}  // namespace
}  // namespace deepcontext::cupti::fake
