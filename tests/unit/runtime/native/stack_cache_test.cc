#include "runtime/native/stack_cache.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "runtime/native/native_stack.h"
#include "tests/unit/runtime/native/call_chain.h"

namespace deepcontext::native {
namespace {

TEST(StackTableTest, SamePathSameIdDifferentPathDifferentId) {
  StackTable table;
  const uintptr_t a[] = {0x1000, 0x2000, 0x3000};
  const uintptr_t a_again[] = {0x1000, 0x2000, 0x3000};
  const uintptr_t b[] = {0x1000, 0x2000, 0x3001};
  const uintptr_t prefix[] = {0x1000, 0x2000};
  const StackId id_a = table.Intern(a, 3);
  ASSERT_NE(id_a, kNoStack);
  EXPECT_EQ(table.Intern(a_again, 3), id_a);
  const StackId id_b = table.Intern(b, 3);
  const StackId id_prefix = table.Intern(prefix, 2);
  EXPECT_NE(id_b, kNoStack);
  EXPECT_NE(id_b, id_a);
  EXPECT_NE(id_prefix, id_a);
  EXPECT_NE(id_prefix, id_b);
  EXPECT_EQ(table.size(), 3u);
  const std::span<const uintptr_t> stored = table.Get(id_b);
  ASSERT_EQ(stored.size(), 3u);
  EXPECT_EQ(stored[2], 0x3001u);
  EXPECT_TRUE(table.Get(kNoStack).empty());
}

TEST(StackTableTest, CapturedStacksInternByPath) {
  StackTable table;
  const Unwinder& unwinder = Unwinder::Default();
  // The same call site three times, then one frame deeper. The depths come
  // from memory the compiler cannot see through: a loop it could unroll or
  // split on `i` (GCC does on AArch64) would give each capture its own call
  // site, hence a different path.
  const std::vector<int> depths = {5, 5, 5, 6};
  std::vector<StackId> ids;
  for (const int depth : depths) {
    uintptr_t pcs[kMaxNativeDepth];
    const int n = native_chain::CaptureAtDepth(unwinder, depth, pcs,
                                               kMaxNativeDepth);
    ids.push_back(table.Intern(pcs, n));
  }
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_NE(ids[0], kNoStack);
  EXPECT_EQ(ids[1], ids[0]);
  EXPECT_EQ(ids[2], ids[0]);
  EXPECT_NE(ids[3], ids[0]);
  EXPECT_NE(ids[3], kNoStack);
  EXPECT_EQ(table.size(), 2u);
}

TEST(StackTableTest, RejectsEmptyAndOversizedStacks) {
  StackTable table;
  const uintptr_t one[] = {0x1};
  EXPECT_EQ(table.Intern(nullptr, 1), kNoStack);
  EXPECT_EQ(table.Intern(one, 0), kNoStack);
  std::vector<uintptr_t> huge(kMaxNativeDepth + 1, 0x42);
  EXPECT_EQ(table.Intern(huge.data(), static_cast<int>(huge.size())),
            kNoStack);
}

TEST(StackTableTest, ManyStacksSurviveIndexGrowth) {
  StackTable table;
  constexpr int kStacks = 20000;
  std::vector<StackId> ids;
  for (int i = 0; i < kStacks; ++i) {
    const uintptr_t pcs[] = {0x400000, 0x500000 + static_cast<uintptr_t>(i)};
    ids.push_back(table.Intern(pcs, 2));
  }
  EXPECT_EQ(table.size(), static_cast<size_t>(kStacks));
  for (int i = 0; i < kStacks; ++i) {
    const uintptr_t pcs[] = {0x400000, 0x500000 + static_cast<uintptr_t>(i)};
    ASSERT_EQ(table.Intern(pcs, 2), ids[i]) << i;
    ASSERT_EQ(table.Get(ids[i])[1], pcs[1]);
  }
}

TEST(StackTableTest, ThreadsAgreeOnIds) {
  StackTable table;
  constexpr int kThreads = 4;
  constexpr int kStacks = 500;
  // seen[t][k]: the id thread t got for stack k (checked on every round).
  std::vector<std::vector<StackId>> seen(
      kThreads, std::vector<StackId>(kStacks, kNoStack));
  std::vector<int> errors(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&table, &seen, &errors, t] {
      for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < kStacks; ++i) {
          // Each thread walks the stacks in a different order.
          const int k = (t % 2 == 0) ? (i + 37 * t) % kStacks
                                     : kStacks - 1 - i;
          const uintptr_t pcs[] = {0x10, static_cast<uintptr_t>(k), 0x30};
          const StackId id = table.Intern(pcs, 3);
          if (id == kNoStack || table.Get(id)[1] != static_cast<uintptr_t>(k) ||
              (seen[t][k] != kNoStack && seen[t][k] != id)) {
            ++errors[t];
          }
          seen[t][k] = id;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(table.size(), static_cast<size_t>(kStacks));
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], 0) << t;
    EXPECT_EQ(seen[t], seen[0]) << t;
  }
}

TEST(StackTableTest, TablesAreIndependent) {
  StackTable first;
  StackTable second;
  const uintptr_t a[] = {0xa};
  const uintptr_t b[] = {0xb};
  EXPECT_EQ(first.Intern(a, 1), 1u);
  EXPECT_EQ(second.Intern(b, 1), 1u);
  // The per-thread cache must not hand out the other table's id.
  EXPECT_EQ(first.Intern(b, 1), 2u);
  EXPECT_EQ(second.Intern(a, 1), 2u);
  EXPECT_EQ(first.Get(1)[0], 0xau);
  EXPECT_EQ(second.Get(1)[0], 0xbu);
}

}  // namespace
}  // namespace deepcontext::native
