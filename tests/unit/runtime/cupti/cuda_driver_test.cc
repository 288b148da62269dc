#include "runtime/cupti/cuda_driver.h"

#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

namespace deepcontext::cupti {
namespace {

DeviceAttributes H200() {
  DeviceAttributes a;
  a.name = "NVIDIA H200";
  a.compute_major = 9;
  a.compute_minor = 0;
  a.sm_count = 132;
  a.warp_size = 32;
  a.max_threads_per_block = 1024;
  a.max_threads_per_sm = 2048;
  a.max_blocks_per_sm = 32;
  a.regs_per_sm = 65536;
  a.max_regs_per_block = 65536;
  a.shared_per_sm = 228 * 1024;
  a.shared_per_block_optin = 227 * 1024;
  a.reserved_shared_per_block = 1024;
  return a;
}

TEST(DeviceInfoFromAttributesTest, MatchesTheArchitectureTableForH200) {
  const gpu::DeviceInfo info = DeviceInfoFromAttributes(H200());
  const gpu::DeviceInfo table = gpu::DeviceInfoForArch(9, 0, 132);
  ASSERT_TRUE(info.Valid());
  EXPECT_EQ(info.name, "NVIDIA H200");
  EXPECT_EQ(info.sm_count, 132);
  EXPECT_EQ(info.max_threads_per_sm, table.max_threads_per_sm);
  EXPECT_EQ(info.max_blocks_per_sm, table.max_blocks_per_sm);
  EXPECT_EQ(info.regs_per_sm, table.regs_per_sm);
  EXPECT_EQ(info.shared_per_sm, table.shared_per_sm);
  EXPECT_EQ(info.shared_per_block_optin, table.shared_per_block_optin);
  EXPECT_EQ(info.reserved_shared_per_block, table.reserved_shared_per_block);
  EXPECT_EQ(info.reg_alloc_unit, table.reg_alloc_unit);
  EXPECT_EQ(info.shared_alloc_unit, table.shared_alloc_unit);
  // Same limits, same occupancy.
  const gpu::LaunchShape shape{256, 64, 16 * 1024, 0};
  EXPECT_DOUBLE_EQ(gpu::ComputeOccupancy(info, shape).fraction,
                   gpu::ComputeOccupancy(table, shape).fraction);
}

TEST(DeviceInfoFromAttributesTest, UnknownArchitectureUsesDriverLimits) {
  DeviceAttributes a = H200();
  a.compute_major = 12;  // not in the table
  a.max_threads_per_sm = 1536;
  a.max_blocks_per_sm = 24;
  a.shared_per_sm = 100 * 1024;
  a.shared_per_block_optin = 99 * 1024;
  const gpu::DeviceInfo info = DeviceInfoFromAttributes(a);
  ASSERT_TRUE(info.Valid());
  EXPECT_EQ(info.compute_major, 12);
  EXPECT_EQ(info.max_threads_per_sm, 1536);
  EXPECT_EQ(info.max_blocks_per_sm, 24);
  EXPECT_EQ(info.shared_per_sm, 100 * 1024);
  EXPECT_GT(gpu::ComputeOccupancy(info, gpu::LaunchShape{128, 32, 0, 0}).fraction, 0.0);
}

TEST(DeviceInfoFromAttributesTest, MissingAttributesKeepTableValues) {
  DeviceAttributes a;
  a.compute_major = 8;
  a.compute_minor = 0;
  a.sm_count = 108;
  const gpu::DeviceInfo info = DeviceInfoFromAttributes(a);
  EXPECT_TRUE(info.Valid());
  EXPECT_EQ(info.max_threads_per_sm, 2048);
  EXPECT_EQ(info.sm_count, 108);
}

class CudaDriverTest : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("DEEPCONTEXT_CUDA_DRIVER"); }
};

TEST_F(CudaDriverTest, MissingLibraryIsReported) {
  setenv("DEEPCONTEXT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  const auto driver = CudaDriver::Load();
  ASSERT_FALSE(driver.ok());
  const std::string& error = driver.status().message();
  EXPECT_EQ(error.rfind("no NVIDIA driver: cannot load /nonexistent/libcuda.so.1", 0),
            0u)
      << error;
}

TEST_F(CudaDriverTest, LibraryWithoutDriverSymbolsIsReported) {
  setenv("DEEPCONTEXT_CUDA_DRIVER", "libz.so.1", 1);
  const auto driver = CudaDriver::Load();
  ASSERT_FALSE(driver.ok());
  const std::string& error = driver.status().message();
  EXPECT_NE(error.find("lacks the device query functions"), std::string::npos)
      << error;
}

TEST_F(CudaDriverTest, QueriesDevicesThroughTheDriver) {
  setenv("DEEPCONTEXT_CUDA_DRIVER", DEEPCONTEXT_FAKE_CUDA_DRIVER, 1);
  const auto loaded = CudaDriver::Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const std::unique_ptr<CudaDriver>& driver = *loaded;
  EXPECT_EQ(driver->DriverVersion(), 13000);
  EXPECT_EQ(driver->DeviceCount(), 2);
  DeviceAttributes attributes;
  ASSERT_TRUE(driver->QueryDevice(1, &attributes));
  EXPECT_EQ(attributes.name, "NVIDIA H200");
  EXPECT_EQ(attributes.sm_count, 132);
  EXPECT_EQ(attributes.shared_per_sm, 228 * 1024);
  EXPECT_FALSE(driver->QueryDevice(2, &attributes));
  const gpu::DeviceInfo info = DeviceInfoFromAttributes(attributes);
  EXPECT_TRUE(info.Valid());
  EXPECT_EQ(info.shared_per_block_optin, 227 * 1024);
  EXPECT_EQ(attributes.total_memory_bytes, 150754820096);
  EXPECT_EQ(info.total_memory_bytes, 150754820096);
}

TEST_F(CudaDriverTest, NamesDevicesByUuidAsNvidiaSmiDoes) {
  setenv("DEEPCONTEXT_CUDA_DRIVER", DEEPCONTEXT_FAKE_CUDA_DRIVER, 1);
  const auto loaded = CudaDriver::Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  // The fake's bytes: fa ce 00 <ordinal> <pid, 4 bytes> then zeros.
  char pid[16];
  std::snprintf(pid, sizeof(pid), "%04x-%04x", static_cast<unsigned>(getpid()) >> 16,
                static_cast<unsigned>(getpid()) & 0xffff);
  EXPECT_EQ((*loaded)->DeviceUuid(1), "GPU-face0001-" + std::string(pid) + "-0000-000000000000");
  EXPECT_EQ((*loaded)->DeviceUuid(2), "");
}

// Stopping the backend waits for the program's GPU work through this, so
// that CUPTI can be detached with no kernel in flight: the thread's current
// context and every active primary context, each once, leaving the thread's
// current context as it was.
class SynchronizeAllContextsTest : public CudaDriverTest {
 protected:
  void SetUp() override {
    setenv("DEEPCONTEXT_CUDA_DRIVER", DEEPCONTEXT_FAKE_CUDA_DRIVER, 1);
    StatusOr<std::unique_ptr<CudaDriver>> driver = CudaDriver::Load();
    ASSERT_TRUE(driver.ok()) << driver.status().message();
    driver_ = std::move(*driver);
    fake_ = dlopen(DEEPCONTEXT_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(fake_, nullptr);
    set_current_ = Get<void (*)(CUcontext)>("fake_cuda_set_current_context");
    primary_ = Get<CUcontext (*)(int)>("fake_cuda_primary_context");
    set_active_ = Get<void (*)(int, int)>("fake_cuda_set_primary_active");
    fail_ = Get<void (*)(int)>("fake_cuda_fail_synchronize");
    synchronized_ = Get<int (*)(CUcontext)>("fake_cuda_synchronize_count");
    retained_ = Get<int (*)(int)>("fake_cuda_primary_retained");
  }
  void TearDown() override {
    set_current_(nullptr);
    set_active_(0, 0);
    set_active_(1, 0);
    fail_(0);
    dlclose(fake_);
    CudaDriverTest::TearDown();
  }
  template <typename Fn>
  Fn Get(const char* name) {
    auto* symbol = dlsym(fake_, name);
    EXPECT_NE(symbol, nullptr) << name;
    return reinterpret_cast<Fn>(symbol);
  }
  CUcontext Current() {
    CUcontext context = nullptr;
    auto get = Get<CUresult (*)(CUcontext*)>("cuCtxGetCurrent");
    get(&context);
    return context;
  }

  std::unique_ptr<CudaDriver> driver_;
  void* fake_ = nullptr;
  void (*set_current_)(CUcontext) = nullptr;
  CUcontext (*primary_)(int) = nullptr;
  void (*set_active_)(int, int) = nullptr;
  void (*fail_)(int) = nullptr;
  int (*synchronized_)(CUcontext) = nullptr;
  int (*retained_)(int) = nullptr;
};

TEST_F(SynchronizeAllContextsTest, NothingToWaitForIsSuccess) {
  EXPECT_TRUE(driver_->SynchronizeAllContexts());
}

TEST_F(SynchronizeAllContextsTest, WaitsForEveryActiveDeviceOnce) {
  set_active_(0, 1);
  set_active_(1, 1);
  set_current_(primary_(0));  // the program's thread, as torch leaves it
  const int before0 = synchronized_(primary_(0));
  const int before1 = synchronized_(primary_(1));
  EXPECT_TRUE(driver_->SynchronizeAllContexts());
  EXPECT_EQ(synchronized_(primary_(0)), before0 + 1);
  EXPECT_EQ(synchronized_(primary_(1)), before1 + 1);
  EXPECT_EQ(Current(), primary_(0));
  EXPECT_EQ(retained_(0), 0);
  EXPECT_EQ(retained_(1), 0);
}

TEST_F(SynchronizeAllContextsTest, InactiveDevicesAreLeftAlone) {
  set_active_(1, 1);  // device 0 never used
  const int before0 = synchronized_(primary_(0));
  const int before1 = synchronized_(primary_(1));
  EXPECT_TRUE(driver_->SynchronizeAllContexts());
  EXPECT_EQ(synchronized_(primary_(0)), before0);
  EXPECT_EQ(synchronized_(primary_(1)), before1 + 1);
  EXPECT_EQ(Current(), nullptr);
}

TEST_F(SynchronizeAllContextsTest, AFailedWaitIsReported) {
  set_active_(0, 1);
  fail_(1);
  EXPECT_FALSE(driver_->SynchronizeAllContexts());
  EXPECT_EQ(Current(), nullptr);
  EXPECT_EQ(retained_(0), 0);
}

}  // namespace
}  // namespace deepcontext::cupti
