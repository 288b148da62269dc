#include "runtime/gpu/interval_union.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

namespace deepcontext::gpu {
namespace {

TEST(IntervalUnionTest, MergesOverlapsAndTouches) {
  IntervalUnion u;
  EXPECT_EQ(u.Length(), 0u);
  u.Add(10, 20);
  u.Add(30, 40);
  EXPECT_EQ(u.Length(), 20u);
  u.Add(15, 35);  // bridges both
  EXPECT_EQ(u.Length(), 30u);
  u.Add(40, 50);  // touches
  EXPECT_EQ(u.Length(), 40u);
  u.Add(0, 100);  // covers everything
  EXPECT_EQ(u.Length(), 100u);
  u.Add(5, 5);    // empty
  u.Add(9, 3);    // inverted
  EXPECT_EQ(u.Length(), 100u);
  EXPECT_EQ(u.count(), 5u);
  EXPECT_EQ(u.first_start(), 0u);
  EXPECT_EQ(u.last_end(), 100u);
}

TEST(IntervalUnionTest, MatchesBruteForceWithinTheWindow) {
  // Intervals slightly out of order, as from several streams; the window is
  // large enough for the disorder, so the result must be exact.
  std::mt19937_64 rng(7);
  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  uint64_t t = 0;
  for (int i = 0; i < 20000; ++i) {
    t += rng() % 50;
    intervals.emplace_back(t, t + 1 + rng() % 80);
  }
  for (size_t i = 0; i + 8 < intervals.size(); i += 8) {
    std::shuffle(intervals.begin() + i, intervals.begin() + i + 8, rng);
  }
  IntervalUnion u(/*window=*/64);
  std::vector<bool> covered(t + 200, false);
  for (const auto& [start, end] : intervals) {
    u.Add(start, end);
    for (uint64_t x = start; x < end; ++x) covered[x] = true;
  }
  uint64_t expected = 0;
  for (bool c : covered) expected += c ? 1 : 0;
  EXPECT_EQ(u.Length(), expected);
}

TEST(IntervalUnionTest, VeryLateIntervalsAreClippedNotDoubleCounted) {
  IntervalUnion u(/*window=*/2);
  u.Add(0, 10);
  u.Add(20, 30);
  u.Add(40, 50);  // folds [0,10) into the committed total
  u.Add(0, 10);   // too late: already counted
  EXPECT_EQ(u.Length(), 30u);
}

}  // namespace
}  // namespace deepcontext::gpu
