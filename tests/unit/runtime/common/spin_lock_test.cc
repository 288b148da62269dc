#include "runtime/common/spin_lock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace deepcontext {
namespace {

// More threads than this machine has cores, all on one lock: every
// increment of the unguarded counter must survive.
TEST(SpinLockTest, ExcludesUnderContention) {
  SpinLock lock;
  long counter = 0;
  constexpr int kThreads = 8;
  constexpr int kIncrements = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        std::lock_guard<SpinLock> guard(lock);
        ++counter;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter, long{kThreads} * kIncrements);
}

// A holder that keeps the lock for long (here it sleeps) makes waiters
// spin past their limit and yield; they still get the lock, in turn, once
// it is released.
TEST(SpinLockTest, WaitersOutlastALongHold) {
  SpinLock lock;
  std::vector<int> order;
  lock.lock();
  std::vector<std::thread> waiters;
  for (int t = 0; t < 4; ++t) {
    waiters.emplace_back([&, t] {
      std::lock_guard<SpinLock> guard(lock);
      order.push_back(t);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  order.push_back(-1);  // still held: no waiter got in
  lock.unlock();
  for (auto& waiter : waiters) waiter.join();
  ASSERT_EQ(order.size(), 5u);
  EXPECT_EQ(order.front(), -1);
}

}  // namespace
}  // namespace deepcontext
