#include "runtime/common/thread_instance.h"

#include <gtest/gtest.h>

#include <thread>

namespace deepcontext {
namespace {

struct Counter {
  int value = 0;
};

TEST(ThreadInstanceTest, OnePerThreadAndStableWithinIt) {
  Counter* mine = ThreadInstance<Counter>();
  ASSERT_NE(mine, nullptr);
  mine->value = 7;
  EXPECT_EQ(ThreadInstance<Counter>(), mine);
  Counter* theirs = nullptr;
  int their_value = -1;
  std::thread([&] {
    theirs = ThreadInstance<Counter>();
    their_value = theirs->value;
  }).join();
  EXPECT_NE(theirs, mine);
  EXPECT_EQ(their_value, 0);
  EXPECT_EQ(ThreadInstance<Counter>()->value, 7);
}

// Calls made while the thread's instance is being destroyed, or after, get
// nullptr rather than the dying object.
struct SeenInDestructor {
  bool asked = false;
  bool got_null = false;
};

SeenInDestructor g_from_instance;
SeenInDestructor g_from_later_exit;

struct AsksWhenDestroyed {
  ~AsksWhenDestroyed() {
    g_from_instance.asked = true;
    g_from_instance.got_null =
        ThreadInstance<AsksWhenDestroyed>() == nullptr;
  }
};

struct AsksAtThreadExit {
  ~AsksAtThreadExit() {
    g_from_later_exit.asked = true;
    g_from_later_exit.got_null = ThreadInstance<AsksWhenDestroyed>() == nullptr;
  }
};

TEST(ThreadInstanceTest, NullWhileAndAfterTheThreadsInstanceIsDestroyed) {
  std::thread([] {
    // Constructed first, so destroyed after the instance's holder.
    static thread_local AsksAtThreadExit late;
    (void)&late;
    ASSERT_NE(ThreadInstance<AsksWhenDestroyed>(), nullptr);
  }).join();
  EXPECT_TRUE(g_from_instance.asked);
  EXPECT_TRUE(g_from_instance.got_null);
  EXPECT_TRUE(g_from_later_exit.asked);
  EXPECT_TRUE(g_from_later_exit.got_null);
}

}  // namespace
}  // namespace deepcontext
