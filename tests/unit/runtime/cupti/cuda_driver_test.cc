#include "runtime/cupti/cuda_driver.h"

#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

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
  const DeviceInfo info = DeviceInfoFromAttributes(H200());
  const DeviceInfo table = DeviceInfoForArch(9, 0, 132);
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
  const LaunchShape shape{256, 64, 16 * 1024, 0};
  EXPECT_DOUBLE_EQ(ComputeOccupancy(info, shape).fraction,
                   ComputeOccupancy(table, shape).fraction);
}

TEST(DeviceInfoFromAttributesTest, UnknownArchitectureUsesDriverLimits) {
  DeviceAttributes a = H200();
  a.compute_major = 12;  // not in the table
  a.max_threads_per_sm = 1536;
  a.max_blocks_per_sm = 24;
  a.shared_per_sm = 100 * 1024;
  a.shared_per_block_optin = 99 * 1024;
  const DeviceInfo info = DeviceInfoFromAttributes(a);
  ASSERT_TRUE(info.Valid());
  EXPECT_EQ(info.compute_major, 12);
  EXPECT_EQ(info.max_threads_per_sm, 1536);
  EXPECT_EQ(info.max_blocks_per_sm, 24);
  EXPECT_EQ(info.shared_per_sm, 100 * 1024);
  EXPECT_GT(ComputeOccupancy(info, LaunchShape{128, 32, 0, 0}).fraction, 0.0);
}

TEST(DeviceInfoFromAttributesTest, MissingAttributesKeepTableValues) {
  DeviceAttributes a;
  a.compute_major = 8;
  a.compute_minor = 0;
  a.sm_count = 108;
  const DeviceInfo info = DeviceInfoFromAttributes(a);
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
  std::string error;
  EXPECT_EQ(CudaDriver::Load(&error), nullptr);
  EXPECT_EQ(error.rfind("no NVIDIA driver: cannot load /nonexistent/libcuda.so.1", 0),
            0u)
      << error;
}

TEST_F(CudaDriverTest, LibraryWithoutDriverSymbolsIsReported) {
  setenv("DEEPCONTEXT_CUDA_DRIVER", "libz.so.1", 1);
  std::string error;
  EXPECT_EQ(CudaDriver::Load(&error), nullptr);
  EXPECT_NE(error.find("lacks the device query functions"), std::string::npos)
      << error;
}

TEST_F(CudaDriverTest, QueriesDevicesThroughTheDriver) {
  setenv("DEEPCONTEXT_CUDA_DRIVER", DEEPCONTEXT_FAKE_CUDA_DRIVER, 1);
  std::string error;
  const auto driver = CudaDriver::Load(&error);
  ASSERT_NE(driver, nullptr) << error;
  EXPECT_EQ(driver->DriverVersion(), 13000);
  EXPECT_EQ(driver->DeviceCount(), 2);
  DeviceAttributes attributes;
  ASSERT_TRUE(driver->QueryDevice(1, &attributes));
  EXPECT_EQ(attributes.name, "NVIDIA H200");
  EXPECT_EQ(attributes.sm_count, 132);
  EXPECT_EQ(attributes.shared_per_sm, 228 * 1024);
  EXPECT_FALSE(driver->QueryDevice(2, &attributes));
  const DeviceInfo info = DeviceInfoFromAttributes(attributes);
  EXPECT_TRUE(info.Valid());
  EXPECT_EQ(info.shared_per_block_optin, 227 * 1024);
}

// Stopping the backend waits for the program's GPU work through this, so
// that CUPTI can be detached safely; with no context current on the
// thread there is nothing to wait for and no call is made.
TEST_F(CudaDriverTest, SynchronizesOnlyAContextThatIsCurrent) {
  setenv("DEEPCONTEXT_CUDA_DRIVER", DEEPCONTEXT_FAKE_CUDA_DRIVER, 1);
  std::string error;
  const auto driver = CudaDriver::Load(&error);
  ASSERT_NE(driver, nullptr) << error;
  void* fake = dlopen(DEEPCONTEXT_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(fake, nullptr);
  const auto set_current = reinterpret_cast<void (*)(CUcontext)>(
      dlsym(fake, "fake_cuda_set_current_context"));
  const auto synchronized =
      reinterpret_cast<int (*)()>(dlsym(fake, "fake_cuda_synchronize_count"));
  ASSERT_NE(set_current, nullptr);
  ASSERT_NE(synchronized, nullptr);

  set_current(nullptr);
  const int before = synchronized();
  EXPECT_FALSE(driver->SynchronizeCurrentContext());
  EXPECT_EQ(synchronized(), before);

  CUctx_st* context = reinterpret_cast<CUctx_st*>(0x1000);
  set_current(context);
  EXPECT_TRUE(driver->SynchronizeCurrentContext());
  EXPECT_EQ(synchronized(), before + 1);
  set_current(nullptr);
  dlclose(fake);
}

}  // namespace
}  // namespace deepcontext::cupti
