#include "runtime/dlmonitor/context_tree.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

namespace deepcontext::dlmonitor {
namespace {

FrameKey Key(uint32_t kind, uint32_t name, uint32_t line = 0) {
  return FrameKey{kind, name, 0, line};
}

TEST(ContextTree, ChildIsCreatedOnceAndFound) {
  ContextTree tree;
  ContextId a = tree.Child(kRootContext, Key(3, 1));
  ContextId b = tree.Child(kRootContext, Key(3, 2));
  EXPECT_NE(a, kNoContext);
  EXPECT_NE(a, b);
  EXPECT_EQ(tree.Child(kRootContext, Key(3, 1)), a);
  ContextId nested = tree.Child(a, Key(3, 1));
  EXPECT_NE(nested, a);
  FrameKey key;
  ContextId parent = 0;
  ASSERT_TRUE(tree.Get(nested, &key, &parent));
  EXPECT_EQ(parent, a);
  EXPECT_EQ(key, Key(3, 1));
  EXPECT_GT(nested, parent);  // parents always have smaller ids
}

// A program with ever new call paths must not grow the tree without bound:
// past the cap new frames go to one marked [other] child of the deepest
// known context, which absorbs everything that would be created below it.
TEST(ContextTree, PathsBeyondTheLimitAreFoldedIntoOtherNodes) {
  ContextTree tree;
  const FrameKey other = Key(5, 99);
  tree.SetLimit(3, other);
  const ContextId a = tree.Child(kRootContext, Key(2, 1));
  const ContextId b = tree.Child(a, Key(2, 2));
  const ContextId c = tree.Child(b, Key(2, 3));
  ASSERT_NE(c, kNoContext);
  EXPECT_EQ(tree.folded(), 0u);
  // Known paths are still found.
  EXPECT_EQ(tree.Child(a, Key(2, 2)), b);
  // A new frame under b goes to b's [other] child ...
  const ContextId folded = tree.Child(b, Key(2, 4));
  FrameKey key;
  ContextId parent = 0;
  ASSERT_TRUE(tree.Get(folded, &key, &parent));
  EXPECT_EQ(key, other);
  EXPECT_EQ(parent, b);
  // ... and so do all others, and everything below it.
  EXPECT_EQ(tree.Child(b, Key(2, 5)), folded);
  EXPECT_EQ(tree.Child(folded, Key(2, 6)), folded);
  EXPECT_EQ(tree.Child(tree.Child(folded, Key(3, 7)), Key(8, 8)), folded);
  EXPECT_EQ(tree.folded(), 5u);
  // One [other] node per parent at most: the tree stays bounded.
  const ContextId end = tree.End();
  for (uint32_t name = 100; name < 10'000; ++name) {
    tree.Child(kRootContext, Key(2, name));
    tree.Child(a, Key(2, name));
    tree.Child(c, Key(2, name));
  }
  EXPECT_EQ(tree.End(), end + 3);
}

TEST(ContextTree, InvalidIdsAreRejected) {
  ContextTree tree;
  EXPECT_EQ(tree.Child(kNoContext, Key(3, 1)), kNoContext);
  EXPECT_EQ(tree.Child(999999, Key(3, 1)), kNoContext);
  EXPECT_FALSE(tree.Get(kNoContext, nullptr, nullptr));
  EXPECT_FALSE(tree.Get(123456, nullptr, nullptr));
}

TEST(ContextTree, WideNodesSwitchToAnIndexAndStayCorrect) {
  ContextTree tree;
  std::vector<ContextId> ids;
  for (uint32_t line = 1; line <= 2000; ++line) {
    ids.push_back(tree.Child(kRootContext, Key(2, 7, line)));
  }
  for (uint32_t line = 1; line <= 2000; ++line) {
    EXPECT_EQ(tree.Child(kRootContext, Key(2, 7, line)), ids[line - 1]);
  }
  EXPECT_EQ(std::set<ContextId>(ids.begin(), ids.end()).size(), 2000u);
}

// Children are found by their whole key, whether a node scans its short
// list of children or has switched to its index: keys that differ in one
// field only are different frames (the same function called from two
// lines, or two files' functions of one name).
TEST(ContextTree, ChildrenDifferingInOneFieldAreDistinct) {
  for (const int siblings : {0, 40}) {
    ContextTree tree;
    for (int i = 0; i < siblings; ++i) {
      tree.Child(kRootContext, FrameKey{9, static_cast<StringId>(1000 + i), 0, 0});
    }
    const FrameKey base{2, 7, 3, 11};
    const FrameKey variants[] = {base, FrameKey{4, 7, 3, 11}, FrameKey{2, 8, 3, 11},
                                 FrameKey{2, 7, 5, 11}, FrameKey{2, 7, 3, 12}};
    std::vector<ContextId> ids;
    for (const FrameKey& key : variants) ids.push_back(tree.Child(kRootContext, key));
    EXPECT_EQ(std::set<ContextId>(ids.begin(), ids.end()).size(), 5u) << siblings;
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(tree.Child(kRootContext, variants[i]), ids[i]) << siblings;
      FrameKey key;
      ASSERT_TRUE(tree.Get(ids[i], &key, nullptr));
      EXPECT_EQ(key, variants[i]);
    }
  }
}

TEST(ContextTree, ConcurrentInsertionYieldsOneNodePerPath) {
  ContextTree tree;
  constexpr int kThreads = 8;
  constexpr uint32_t kPaths = 300;
  std::vector<std::vector<ContextId>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t i = 0; i < kPaths; ++i) {
        // Threads walk the same paths in different orders.
        uint32_t p = (i * 7 + t * 13) % kPaths;
        ContextId parent = tree.Child(kRootContext, Key(1, p % 5));
        ContextId leaf = tree.Child(parent, Key(3, p));
        seen[t].push_back(leaf * 1000 + p);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  // Every thread must have got the same id for the same path.
  std::set<ContextId> leaves_by_path[kPaths];
  for (const auto& ids : seen) {
    for (ContextId encoded : ids) leaves_by_path[encoded % 1000].insert(encoded / 1000);
  }
  for (uint32_t p = 0; p < kPaths; ++p) EXPECT_EQ(leaves_by_path[p].size(), 1u);
  // root + 5 parents + kPaths leaves, plus the reserved id 0.
  EXPECT_EQ(tree.End(), 2u + 5u + kPaths);
}

}  // namespace
}  // namespace deepcontext::dlmonitor
