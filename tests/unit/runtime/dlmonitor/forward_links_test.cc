#include "runtime/dlmonitor/forward_links.h"

#include <gtest/gtest.h>

namespace deepcontext::dlmonitor {
namespace {

TEST(ForwardLinks, LatestAnchorWins) {
  ForwardLinks links;
  links.Remember(1, 5, 100);  // e.g. loss.item(): reports 5, creates no node
  links.Remember(1, 5, 200);  // the op that creates backward node 5
  EXPECT_EQ(links.Find(1, 5), 200u);
  EXPECT_EQ(links.Find(2, 5), kNoContext);  // other forward thread
  EXPECT_EQ(links.Find(1, 6), kNoContext);
}

TEST(ForwardLinks, NegativeSequenceNumbersAreIgnored) {
  ForwardLinks links;
  links.Remember(1, -1, 100);
  EXPECT_EQ(links.Find(1, -1), kNoContext);
}

TEST(ForwardLinks, OldestEntriesAreEvicted) {
  ForwardLinks links;
  const int64_t total = ForwardLinks::kShards * ForwardLinks::kMaxPerShard * 2;
  for (int64_t seq = 0; seq < total; ++seq) links.Remember(1, seq, seq + 10);
  EXPECT_EQ(links.Find(1, total - 1), static_cast<ContextId>(total + 9));
  EXPECT_EQ(links.Find(1, 0), kNoContext);
}

TEST(ForwardLinks, ClearForgetsEverything) {
  ForwardLinks links;
  links.Remember(1, 1, 10);
  links.Clear();
  EXPECT_EQ(links.Find(1, 1), kNoContext);
}

}  // namespace
}  // namespace deepcontext::dlmonitor
