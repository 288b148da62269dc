#include "runtime/common/flat_hash_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace deepcontext {
namespace {

struct Key {
  uint64_t a = 0;
  uint32_t b = 0;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& key) const { return key.a * 31 + key.b; }
};

// Every key in one slot's chain: probing must still find each one.
struct CollidingHash {
  size_t operator()(const Key&) const { return 7; }
};

TEST(FlatHashMap, FindsWhatWasInsertedAcrossGrowth) {
  FlatHashMap<Key, uint64_t, KeyHash> map;
  std::unordered_map<uint64_t, uint64_t> expected;
  for (uint64_t i = 0; i < 5000; ++i) {
    const Key key{i * 977, static_cast<uint32_t>(i % 3)};
    map[key] = i + 1;
    expected[i] = i + 1;
  }
  EXPECT_EQ(map.size(), 5000u);
  for (uint64_t i = 0; i < 5000; ++i) {
    const uint64_t* value = map.Find(Key{i * 977, static_cast<uint32_t>(i % 3)});
    ASSERT_NE(value, nullptr) << i;
    EXPECT_EQ(*value, expected[i]);
  }
  EXPECT_EQ(map.Find(Key{1, 1}), nullptr);
}

TEST(FlatHashMap, IndexingAnExistingKeyKeepsItsValue) {
  FlatHashMap<Key, std::vector<int>, KeyHash> map;
  map[Key{1, 2}].push_back(10);
  map[Key{1, 2}].push_back(20);
  EXPECT_EQ(map.size(), 1u);
  ASSERT_NE(map.Find(Key{1, 2}), nullptr);
  EXPECT_EQ(*map.Find(Key{1, 2}), (std::vector<int>{10, 20}));
}

TEST(FlatHashMap, CollidingKeysAreToldApart) {
  FlatHashMap<Key, std::string, CollidingHash> map;
  for (uint64_t i = 0; i < 200; ++i) map[Key{i, 0}] = std::to_string(i);
  for (uint64_t i = 0; i < 200; ++i) {
    const std::string* value = map.Find(Key{i, 0});
    ASSERT_NE(value, nullptr) << i;
    EXPECT_EQ(*value, std::to_string(i));
  }
  EXPECT_EQ(map.Find(Key{200, 0}), nullptr);
}

TEST(FlatHashMap, ClearStartsOver) {
  FlatHashMap<Key, int, KeyHash> map;
  EXPECT_EQ(map.Find(Key{1, 0}), nullptr);  // empty: no slots at all
  map[Key{1, 0}] = 5;
  map.clear();
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.Find(Key{1, 0}), nullptr);
  map[Key{1, 0}] = 6;
  ASSERT_NE(map.Find(Key{1, 0}), nullptr);
  EXPECT_EQ(*map.Find(Key{1, 0}), 6);
}

}  // namespace
}  // namespace deepcontext
