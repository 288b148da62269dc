#include "runtime/cupti/activity_buffer_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace deepcontext::cupti {
namespace {

TEST(ActivityBufferPoolTest, HandsOutAlignedBuffersAndReusesThem) {
  ActivityBufferPool pool(1000, 2);
  EXPECT_EQ(pool.buffer_size() % ActivityBufferPool::kAlignment, 0u);
  EXPECT_GE(pool.buffer_size(), 1000u);
  uint8_t* a = pool.Acquire();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % ActivityBufferPool::kAlignment, 0u);
  std::memset(a, 0xab, pool.buffer_size());  // the whole buffer is usable
  EXPECT_EQ(pool.outstanding(), 1u);
  pool.Release(a);
  EXPECT_EQ(pool.outstanding(), 0u);
  EXPECT_EQ(pool.pooled(), 1u);
  EXPECT_EQ(pool.Acquire(), a);  // reused, not reallocated
  EXPECT_EQ(pool.allocated(), 1u);
  pool.Release(a);
}

bool AllZero(const uint8_t* buffer, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    if (buffer[i] != 0) return false;
  }
  return true;
}

// CUPTI is told the buffers come cleared (gpu_backend_state.cc), so a
// buffer written and released is cleared before it is handed out again.
TEST(ActivityBufferPoolTest, HandsOutClearedBuffersOnly) {
  ActivityBufferPool pool(10000, 2);
  uint8_t* a = pool.Acquire();
  uint8_t* b = pool.Acquire();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(AllZero(a, pool.buffer_size()));
  std::memset(a, 0xcd, pool.buffer_size());
  b[pool.buffer_size() - 1] = 1;
  pool.Release(a);
  pool.Release(b);
  uint8_t* again = pool.Acquire();
  uint8_t* again2 = pool.Acquire();
  EXPECT_TRUE(AllZero(again, pool.buffer_size()));
  EXPECT_TRUE(AllZero(again2, pool.buffer_size()));
  EXPECT_EQ(pool.allocated(), 2u);
  pool.Release(again);
  pool.Release(again2);
}

TEST(ActivityBufferPoolTest, KeepsAtMostMaxFree) {
  ActivityBufferPool pool(256, 2);
  std::vector<uint8_t*> buffers;
  for (int i = 0; i < 5; ++i) buffers.push_back(pool.Acquire());
  EXPECT_EQ(pool.allocated(), 5u);
  EXPECT_EQ(pool.outstanding(), 5u);
  for (uint8_t* buffer : buffers) pool.Release(buffer);
  EXPECT_EQ(pool.pooled(), 2u);
  EXPECT_EQ(pool.outstanding(), 0u);
  pool.Release(nullptr);
  EXPECT_EQ(pool.pooled(), 2u);
}

TEST(ActivityBufferPoolTest, DefaultSizeIsEightMebibytes) {
  ActivityBufferPool pool;
  EXPECT_EQ(pool.buffer_size(), size_t{8} << 20);
}

}  // namespace
}  // namespace deepcontext::cupti
