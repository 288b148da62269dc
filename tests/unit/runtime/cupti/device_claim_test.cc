// The backend's claim on a context's GPU: keyed by the device's UUID, and
// measured without a lock, saying why, when the device cannot be named.
#include "runtime/cupti/device_claim.h"

#include <cupti.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "runtime/cupti/cupti_functions.h"
#include "tests/unit/scratch_dir.h"

namespace deepcontext::cupti {
namespace {

CUptiResult CUPTIAPI OnDevice1(CUcontext, uint32_t* device) {
  *device = 1;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI NoDevice(CUcontext, uint32_t*) { return CUPTI_ERROR_INVALID_CONTEXT; }

class DeviceClaimTest : public ::testing::Test {
 protected:
  static std::string Uuid(uint32_t ordinal) {
    return ordinal == 1 ? "GPU-00000000-0000-0000-0000-000000000001" : "";
  }

  ScratchDir scratch_;
  const std::string dir_ = scratch_.path();
  std::unique_ptr<gpu::CounterClaims> claims_ = std::make_unique<gpu::CounterClaims>(dir_);
  CuptiFunctions f_;
};

TEST_F(DeviceClaimTest, TheContextsDeviceUuidKeysTheClaim) {
  f_.get_device_id = &OnDevice1;
  const gpu::ClaimDevice claim = ClaimDeviceOf(f_, &Uuid, "GPU instruction samples", *claims_);
  auto held = claim(reinterpret_cast<void*>(0x5000));
  ASSERT_TRUE(held.ok()) << held.status().message();
  EXPECT_EQ((*held)->device_key(), "GPU-00000000-0000-0000-0000-000000000001");
  EXPECT_EQ((*held)->uncoordinated(), "");
  gpu::CounterClaims other(dir_);
  auto refused = other.Claim("GPU-00000000-0000-0000-0000-000000000001", "GPU hardware counters");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(", GPU instruction samples: "), std::string::npos);
}

TEST_F(DeviceClaimTest, ADeviceThatCannotBeNamedIsMeasuredWithoutALock) {
  const gpu::ClaimDevice no_call = ClaimDeviceOf(f_, &Uuid, "GPU instruction samples", *claims_);
  auto held = no_call(nullptr);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ((*held)->uncoordinated(), "this CUPTI lacks cuptiGetDeviceId");

  f_.get_device_id = &NoDevice;
  held = ClaimDeviceOf(f_, &Uuid, "GPU instruction samples", *claims_)(nullptr);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ((*held)->uncoordinated(), "cuptiGetDeviceId failed for the context");

  f_.get_device_id = &OnDevice1;
  held = ClaimDeviceOf(f_, [](uint32_t) { return std::string(); }, "GPU instruction samples",
                       *claims_)(nullptr);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ((*held)->uncoordinated(), "the driver gave no UUID for device 1");
}

}  // namespace
}  // namespace deepcontext::cupti
