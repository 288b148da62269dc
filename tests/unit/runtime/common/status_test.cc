#include "runtime/common/status.h"

#include <gtest/gtest.h>

namespace deepcontext {
namespace {

TEST(Status, OkCarriesNoMessage) {
  const Status ok = Status::Ok();
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code(), Status::Code::kOk);
  EXPECT_EQ(ok.message(), "");
}

TEST(Status, AnErrorKeepsItsLineAndCode) {
  const Status error = Status::Error("no such signal");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.code(), Status::Code::kError);
  EXPECT_EQ(error.message(), "no such signal");
  EXPECT_EQ(Status::Error("counters need root", Status::Code::kPermissionDenied).code(),
            Status::Code::kPermissionDenied);
}

// An error made with the success code would read as success: it stays an error.
TEST(Status, AnErrorCannotBeOk) {
  const Status error = Status::Error("refused", Status::Code::kOk);
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.code(), Status::Code::kError);
}

// Even without a message an error is an error, unlike an empty error string.
TEST(Status, AnErrorWithoutTextIsStillAnError) {
  EXPECT_FALSE(Status::Error("").ok());
}

}  // namespace
}  // namespace deepcontext
