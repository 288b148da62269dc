#include "runtime/common/all_signals_blocked.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <thread>

namespace deepcontext {
namespace {

bool Blocked(int signal_number) {
  sigset_t current;
  pthread_sigmask(SIG_SETMASK, nullptr, &current);
  return sigismember(&current, signal_number) == 1;
}

TEST(AllSignalsBlocked, AThreadStartedInsideStartsWithEverySignalBlocked) {
  ASSERT_FALSE(Blocked(SIGINT));
  bool inside = false;
  {
    const AllSignalsBlocked blocked;
    EXPECT_TRUE(Blocked(SIGINT));
    EXPECT_TRUE(Blocked(SIGTERM));
    std::thread([&inside] { inside = Blocked(SIGINT) && Blocked(SIGTERM); }).join();
  }
  EXPECT_TRUE(inside);
  // The creating thread gets its own mask back.
  EXPECT_FALSE(Blocked(SIGINT));
  EXPECT_FALSE(Blocked(SIGTERM));
  bool outside = true;
  std::thread([&outside] { outside = Blocked(SIGINT); }).join();
  EXPECT_FALSE(outside);
}

}  // namespace
}  // namespace deepcontext
