#include "runtime/common/ended_elsewhere.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace deepcontext {
namespace {

std::vector<uint64_t> TakeIds(EndedElsewhere& ends, uint64_t thread, uint64_t* seen) {
  std::vector<uint64_t> ids;
  ends.Take(thread, seen, [&](const EndedElsewhere::End& end) { ids.push_back(end.op_id); });
  return ids;
}

TEST(EndedElsewhere, EachThreadTakesOnlyItsOwnEndsOnce) {
  EndedElsewhere ends;
  uint64_t seen = 0;
  EXPECT_EQ(ends.posts(), seen);
  std::thread([&] {
    ends.Post(/*thread=*/1, /*op_id=*/10, /*at=*/100);
    ends.Post(2, 20, 200);
    ends.Post(1, 11, 300);
  }).join();
  EXPECT_NE(ends.posts(), seen);
  EXPECT_EQ(TakeIds(ends, 1, &seen), (std::vector<uint64_t>{10, 11}));
  EXPECT_EQ(seen, ends.posts());
  EXPECT_TRUE(TakeIds(ends, 1, &seen).empty());
  uint64_t other_seen = 0;
  EXPECT_EQ(TakeIds(ends, 2, &other_seen), (std::vector<uint64_t>{20}));
}

TEST(EndedElsewhere, AnEndComesAfterOnlyTheOpsEnteredBeforeItWasPosted) {
  EndedElsewhere ends;
  uint64_t seen = 0;
  const uint64_t entered_before = seen;
  ends.Post(1, 10, 0);
  // A thread without its id yet takes nothing but catches up.
  EXPECT_TRUE(TakeIds(ends, 0, &seen).empty());
  const uint64_t entered_after = seen;
  std::vector<EndedElsewhere::End> taken;
  ends.Take(1, &seen, [&](const EndedElsewhere::End& end) { taken.push_back(end); });
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].at, 0);
  EXPECT_TRUE(EndedElsewhere::After(taken[0], entered_before));
  EXPECT_FALSE(EndedElsewhere::After(taken[0], entered_after));
}

struct OpenOp {
  uint64_t op_id = 0;
  uint64_t ends_seen = 0;
};

TEST(EndedElsewhere, RemoveTakesTheOpOutWhereverItStands) {
  EndedElsewhere ends;
  ends.Post(1, 20, 0);
  uint64_t seen = 0;
  std::vector<EndedElsewhere::End> taken;
  ends.Take(1, &seen, [&](const EndedElsewhere::End& end) { taken.push_back(end); });
  ASSERT_EQ(taken.size(), 1u);
  // Op 20 again above the ended one, entered after the post: not its.
  std::vector<OpenOp> ops = {{10, 0}, {20, 0}, {30, 0}, {20, seen}};
  OpenOp closed;
  ASSERT_TRUE(EndedElsewhere::Remove(ops, taken[0], &closed));
  EXPECT_EQ(closed.op_id, 20u);
  EXPECT_EQ(closed.ends_seen, 0u);
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].op_id, 10u);
  EXPECT_EQ(ops[1].op_id, 30u);
  EXPECT_EQ(ops[2].op_id, 20u);
  EXPECT_EQ(ops[2].ends_seen, seen);
  EXPECT_FALSE(EndedElsewhere::Remove(ops, taken[0]));
  EXPECT_EQ(ops.size(), 3u);
}

TEST(EndedElsewhere, KeepsTheNewestEndsOfThreadsThatNeverLook) {
  EndedElsewhere ends;
  for (uint64_t i = 0; i < EndedElsewhere::kMaxPending + 5; ++i) ends.Post(7, i, 0);
  uint64_t seen = 0;
  const std::vector<uint64_t> ids = TakeIds(ends, 7, &seen);
  ASSERT_EQ(ids.size(), EndedElsewhere::kMaxPending);
  EXPECT_EQ(ids.front(), 5u);
  EXPECT_EQ(ids.back(), EndedElsewhere::kMaxPending + 4);
}

TEST(EndedElsewhere, AForkForgetsTheParentsEndsAndIsSeen) {
  EndedElsewhere ends;
  ends.Post(1, 10, 0);
  uint64_t seen = ends.posts();
  ends.ResetAfterFork();
  EXPECT_NE(ends.posts(), seen);
  EXPECT_TRUE(TakeIds(ends, 1, &seen).empty());
}

}  // namespace
}  // namespace deepcontext
