#include "runtime/cupti/cupti_detach.h"

#include <gtest/gtest.h>

namespace deepcontext::cupti {
namespace {

DetachInput Held(uint32_t version) {
  DetachInput input;
  input.cupti_api_version = version;
  input.subscribed = true;
  return input;
}

TEST(CuptiDetachTest, DetachesFromCuda126On) {
  EXPECT_EQ(DetachRefusal(Held(24)), "");       // CUDA 12.6
  EXPECT_EQ(DetachRefusal(Held(27)), "");       // CUDA 12.9
  EXPECT_EQ(DetachRefusal(Held(130001)), "");   // CUDA 13.0 Update 1
  EXPECT_EQ(DetachDescription(Held(130001)).rfind("at stop (cuptiFinalize)", 0), 0u);
}

TEST(CuptiDetachTest, OlderCuptiStaysAttached) {
  const std::string why = DetachRefusal(Held(23));  // CUDA 12.5
  EXPECT_NE(why.find("CUPTI API version 23 predates CUDA 12.6"), std::string::npos) << why;
  EXPECT_EQ(DetachDescription(Held(23)).rfind("no: CUPTI API version 23", 0), 0u);
}

TEST(CuptiDetachTest, TheSettingKeepsCuptiAttached) {
  DetachInput input = Held(130001);
  input.setting = "0";
  EXPECT_EQ(DetachRefusal(input), "turned off (DEEPCONTEXT_CUPTI_DETACH=0)");
  input.setting = "1";
  EXPECT_EQ(DetachRefusal(input), "");
  input.setting = "";
  EXPECT_EQ(DetachRefusal(input), "");
}

// Kernels still in flight would write their timestamps into memory that
// detaching frees.
TEST(CuptiDetachTest, GpuWorkNotWaitedForKeepsCuptiAttached) {
  DetachInput input = Held(130001);
  input.gpu_idle = false;
  EXPECT_EQ(DetachRefusal(input),
            "the GPU work could not be waited for when profiling stopped");
}

// Detaching would end another tool's tracing along with ours.
TEST(CuptiDetachTest, AnotherClientKeepsCuptiAttached) {
  DetachInput input = Held(130001);
  input.subscribed = false;
  EXPECT_EQ(DetachRefusal(input), "another CUPTI client holds the subscription");
  input = Held(130001);
  input.launches_without_records = 3;
  EXPECT_EQ(DetachRefusal(input), "another CUPTI client took the activity records");
}

}  // namespace
}  // namespace deepcontext::cupti
