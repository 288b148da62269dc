// The DEEPCONTEXT_NATIVE_STATS=1 line (capture_stats.h): why calls inside
// ops kept unwinding, by the outcome of their trails. The variable is read
// once per process: ctest runs this test with it set
// (tests/unit/runtime/native/CMakeLists.txt); without it, it is skipped.
#include <gtest/gtest.h>

#include <string>

#include "runtime/native/capture_stats.h"

namespace deepcontext::native {
namespace {

TEST(CaptureStats, CountsWhyTrailsWereNotKept) {
  if (!CaptureStatsEnabled()) GTEST_SKIP() << "DEEPCONTEXT_NATIVE_STATS=1 is not set";
  EXPECT_EQ(CaptureStatsLine().find("inside-op trails"), std::string::npos);
  RecordTrailOutcome(TrailOutcome::kKept);
  RecordTrailOutcome(TrailOutcome::kKept);
  RecordTrailOutcome(TrailOutcome::kTooManySteps);
  RecordTrailOutcome(TrailOutcome::kTooManyWords);
  RecordTrailOutcome(TrailOutcome::kTooManyWords);
  RecordTrailOutcome(TrailOutcome::kOtherStack);
  RecordTrailOutcome(TrailOutcome::kNoEntryAnchor);
  RecordTrailOutcome(TrailOutcome::kMarked);
  RecordTrailOutcome(TrailOutcome::kMarked);
  const std::string line = CaptureStatsLine();
  EXPECT_NE(line.find("inside-op trails: 2 kept, 3 too long (1 past 48 steps, 2 past 96 "
                      "words), 0 not recorded, "
                      "1 not the unwound stack; calls unwound: 1 in an op not the latest "
                      "captured, 0 whose trails did not hold, 2 of keys without one"),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace deepcontext::native
