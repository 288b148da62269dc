#include "common/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

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

TEST(StatusOr, AValueIsOkAndReachable) {
  StatusOr<std::string> text = std::string("tracing kernels");
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(text.status().ok());
  EXPECT_EQ(text.value(), "tracing kernels");
  EXPECT_EQ(*text, "tracing kernels");
  EXPECT_EQ(text->size(), 15u);
  text.value() += "; copies";
  EXPECT_EQ(std::as_const(text).value(), "tracing kernels; copies");
}

TEST(StatusOr, AnErrorHasNoValueAndKeepsItsLineAndCode) {
  const StatusOr<int> number =
      Status::Error("counters need root", Status::Code::kPermissionDenied);
  EXPECT_FALSE(number.ok());
  EXPECT_EQ(number.status().code(), Status::Code::kPermissionDenied);
  EXPECT_EQ(number.status().message(), "counters need root");
}

// An ok Status has no value to hand out: were it a success, value() would
// read nothing. It becomes an error that says so.
TEST(StatusOr, AnOkStatusBecomesAnError) {
  const StatusOr<int> number = Status::Ok();
  EXPECT_FALSE(number.ok());
  EXPECT_FALSE(number.status().ok());
  EXPECT_EQ(number.status().code(), Status::Code::kError);
  EXPECT_NE(number.status().message(), "");
}

// A move-only value (the GPU backend) can be taken out.
TEST(StatusOr, AMoveOnlyValueCanBeTakenOut) {
  StatusOr<std::unique_ptr<int>> owner = std::make_unique<int>(7);
  ASSERT_TRUE(owner.ok());
  EXPECT_EQ(**owner, 7);
  std::unique_ptr<int> taken = std::move(owner).value();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(*taken, 7);
  StatusOr<std::unique_ptr<int>> again = std::make_unique<int>(8);
  std::unique_ptr<int> star = *std::move(again);
  EXPECT_EQ(*star, 8);
}

}  // namespace
}  // namespace deepcontext
