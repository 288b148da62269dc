#include "runtime/dlmonitor/child_cache.h"

#include <gtest/gtest.h>

#include <memory>

#include "deepcontext/dlmonitor.h"

namespace deepcontext::dlmonitor {
namespace {

// A Python frame's key: the same function's lines differ by line only.
FrameKey Line(uint32_t line, uint32_t file = 7) {
  return FrameKey{DLMONITOR_FRAME_PYTHON, 3, file, line};
}

ContextId Lookup(ChildCache& cache, ContextId parent, const FrameKey& key) {
  return ChildCache::Answer(cache.SlotOf(parent, key), parent, key);
}

void Remember(ChildCache& cache, ContextId parent, const FrameKey& key, ContextId child) {
  ChildCache::Remember(cache.SlotOf(parent, key), parent, key, child);
}

TEST(ChildCache, AnswersWhatItRemembered) {
  auto cache = std::make_unique<ChildCache>();
  EXPECT_EQ(Lookup(*cache, 5, Line(10)), kNoContext);
  Remember(*cache, 5, Line(10), 42);
  EXPECT_EQ(Lookup(*cache, 5, Line(10)), 42u);
}

// Two lines of one loop body alternate under the same parent: each keeps
// its own child, and neither is answered for the other.
TEST(ChildCache, KeysDifferingInLineOrFileAloneAreToldApart) {
  auto cache = std::make_unique<ChildCache>();
  Remember(*cache, 5, Line(10), 42);
  Remember(*cache, 5, Line(11), 43);
  EXPECT_EQ(Lookup(*cache, 5, Line(10)), 42u);
  EXPECT_EQ(Lookup(*cache, 5, Line(11)), 43u);
  EXPECT_EQ(Lookup(*cache, 5, Line(10, 8)), kNoContext);
  EXPECT_EQ(Lookup(*cache, 6, Line(10)), kNoContext);
  FrameKey other_kind = Line(10);
  other_kind.kind = DLMONITOR_FRAME_OPERATOR;
  EXPECT_EQ(Lookup(*cache, 5, other_kind), kNoContext);
}

// Whatever shares a slot with a remembered key (the cache is direct-mapped)
// replaces it, and is never answered with the other key's child.
TEST(ChildCache, ASlotAnswersOnlyTheKeyItHolds) {
  auto cache = std::make_unique<ChildCache>();
  Remember(*cache, 5, Line(10), 42);
  const ChildCache::Entry* first = &cache->SlotOf(5, Line(10));
  uint32_t line = 11;
  while (&cache->SlotOf(5, Line(line)) != first) ++line;
  EXPECT_EQ(Lookup(*cache, 5, Line(line)), kNoContext);
  Remember(*cache, 5, Line(line), 77);
  EXPECT_EQ(Lookup(*cache, 5, Line(line)), 77u);
  EXPECT_EQ(Lookup(*cache, 5, Line(10)), kNoContext);
}

// A full tree answers kNoContext; that is not kept, so that the key is
// asked again.
TEST(ChildCache, NoAnswerIsNotRemembered) {
  auto cache = std::make_unique<ChildCache>();
  Remember(*cache, 5, Line(10), 42);
  Remember(*cache, 5, Line(10), kNoContext);
  EXPECT_EQ(Lookup(*cache, 5, Line(10)), 42u);
}

TEST(ChildCache, EntriesShareNoCacheLine) {
  auto cache = std::make_unique<ChildCache>();
  for (uint32_t line = 0; line < 4096; ++line) {
    const auto address = reinterpret_cast<uintptr_t>(&cache->SlotOf(line, Line(line)));
    EXPECT_LE(address % 64 + sizeof(ChildCache::Entry), 64u) << line;
  }
}

}  // namespace
}  // namespace deepcontext::dlmonitor
