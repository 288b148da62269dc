#include "runtime/dlmonitor/forward_links.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

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
  constexpr int64_t kWindow = ForwardLinks::kSets * ForwardLinks::kWays;
  const int64_t total = kWindow * 2;
  for (int64_t seq = 0; seq < total; ++seq) links.Remember(1, seq, seq + 10);
  EXPECT_EQ(links.Find(1, total - 1), static_cast<ContextId>(total + 9));
  EXPECT_EQ(links.Find(1, total - kWindow), static_cast<ContextId>(total - kWindow + 10));
  EXPECT_EQ(links.Find(1, total - kWindow - 1), kNoContext);
  EXPECT_EQ(links.Find(1, 0), kNoContext);
}

TEST(ForwardLinks, ThreadsWithTheSameNumbersKeepTheirOwnLinks) {
  ForwardLinks links;
  for (int64_t seq = 0; seq < 1000; ++seq) {
    links.Remember(1, seq, 10 + seq);
    links.Remember(2, seq, 5000 + seq);
  }
  for (int64_t seq = 0; seq < 1000; ++seq) {
    ASSERT_EQ(links.Find(1, seq), static_cast<ContextId>(10 + seq)) << seq;
    ASSERT_EQ(links.Find(2, seq), static_cast<ContextId>(5000 + seq)) << seq;
  }
}

TEST(ForwardLinks, EightReplicasAtTheSameNumbersKeepAQuarterTableEach) {
  // DataParallel-like: eight forward threads, each at numbers 0, 1, 2, ...
  ForwardLinks links;
  constexpr int64_t kOps = ForwardLinks::kSets / 4;
  for (uint64_t thread_id = 1; thread_id <= 8; ++thread_id) {
    for (int64_t seq = 0; seq < kOps; ++seq) links.Remember(thread_id, seq, thread_id);
  }
  for (uint64_t thread_id = 1; thread_id <= 8; ++thread_id) {
    int64_t lost = 0;
    for (int64_t seq = 0; seq < kOps; ++seq) lost += links.Find(thread_id, seq) != thread_id;
    EXPECT_EQ(lost, 0) << "thread " << thread_id;
  }
}

TEST(ForwardLinks, FindBeforeAnyRememberFindsNothing) {
  const ForwardLinks links;
  EXPECT_EQ(links.Find(1, 0), kNoContext);
}

TEST(ForwardLinks, ConcurrentThreadsSeeTheirOwnLatestLinks) {
  ForwardLinks links;
  constexpr int kThreads = 4;
  constexpr int64_t kOps = 20000;
  std::vector<int> errors(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&links, &errors, t] {
      const uint64_t thread_id = static_cast<uint64_t>(t) + 1;
      for (int64_t seq = 0; seq < kOps; ++seq) {
        const ContextId anchor = thread_id * 1000000 + static_cast<ContextId>(seq);
        links.Remember(thread_id, seq, anchor);
        if (links.Find(thread_id, seq) != anchor) ++errors[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], 0) << "thread " << t;
}

TEST(ForwardLinks, ClearForgetsEverything) {
  ForwardLinks links;
  links.Remember(1, 1, 10);
  links.Clear();
  EXPECT_EQ(links.Find(1, 1), kNoContext);
}

}  // namespace
}  // namespace deepcontext::dlmonitor
