#include "runtime/common/direct_mapped_cache.h"

#include <gtest/gtest.h>

#include <string>

namespace deepcontext {
namespace {

struct Identity {
  size_t operator()(int key) const { return static_cast<size_t>(key); }
};

TEST(DirectMappedCache, FindsWhatWasPut) {
  DirectMappedCache<int, std::string, Identity, 8> cache;
  EXPECT_EQ(cache.Find(3), nullptr);
  cache.Put(3, "three");
  ASSERT_NE(cache.Find(3), nullptr);
  EXPECT_EQ(*cache.Find(3), "three");
  EXPECT_EQ(cache.Find(4), nullptr);
}

TEST(DirectMappedCache, AKeyInTheSameSlotReplacesAndIsNeverMistakenForIt) {
  DirectMappedCache<int, std::string, Identity, 8> cache;
  cache.Put(3, "three");
  cache.Put(11, "eleven");  // 11 % 8 == 3
  EXPECT_EQ(cache.Find(3), nullptr);
  ASSERT_NE(cache.Find(11), nullptr);
  EXPECT_EQ(*cache.Find(11), "eleven");
}

TEST(DirectMappedCache, AnUnusedSlotDoesNotMatchTheDefaultKey) {
  DirectMappedCache<int, std::string, Identity, 8> cache;
  EXPECT_EQ(cache.Find(0), nullptr);  // slots start with key 0
}

TEST(DirectMappedCache, ClearForgetsEverything) {
  DirectMappedCache<int, std::string, Identity, 8> cache;
  cache.Put(1, "one");
  cache.Clear();
  EXPECT_EQ(cache.Find(1), nullptr);
}

}  // namespace
}  // namespace deepcontext
