#include "tools/analysis/status.h"

#include <gtest/gtest.h>

#include <string>

namespace deepcontext::analysis {
namespace {

StatusOr<int> Parse(const std::string& text) {
  if (text.empty()) return Status::Error("empty input");
  return static_cast<int>(text.size());
}

TEST(AnalysisStatusOr, HoldsAValueOrTheErrorSayingWhyNot) {
  StatusOr<int> parsed = Parse("abc");
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed.status().ok());
  EXPECT_EQ(parsed.value(), 3);

  StatusOr<int> failed = Parse("");
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "empty input");
}

// A function that returns Status::Ok() where a value was due would
// otherwise give a result that is not ok() while its status() is ok, and
// callers that report status().message() would print an empty error.
TEST(AnalysisStatusOr, AnOkStatusBecomesAnError) {
  StatusOr<int> result = Status::Ok();
  EXPECT_FALSE(result.ok());
  EXPECT_FALSE(result.status().ok());
  EXPECT_FALSE(result.status().message().empty());
}

}  // namespace
}  // namespace deepcontext::analysis
