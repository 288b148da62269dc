#include "runtime/profiler/signal_guard.h"

#include <gtest/gtest.h>
#include <semaphore.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cerrno>

#include "tests/unit/runtime/thread_names.h"

namespace deepcontext::profiler {
namespace {

// Like CPython's C handler: it only notes the signal; the real handler runs
// when the main thread next checks.
std::atomic<int> g_noted{0};
void NoteSignal(int) { g_noted.fetch_add(1); }

class SignalGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct sigaction note {};
    note.sa_handler = &NoteSignal;
    sigemptyset(&note.sa_mask);
    ASSERT_EQ(sigaction(SIGUSR2, &note, &saved_), 0);
    g_noted = 0;
    sem_init(&never_posted_, 0, 0);
  }
  void TearDown() override {
    AcknowledgeSignal();
    // A resend decided just before the acknowledgement still arrives: let
    // it land on the noting handler, not on the default action.
    const struct timespec settle{0, 100'000'000};
    nanosleep(&settle, nullptr);
    sigaction(SIGUSR2, &saved_, nullptr);
    sem_destroy(&never_posted_);
  }

  // A blocking call that only an interruption ends (a multiprocessing lock
  // that will never be released); -1 with errno, or 0.
  int BlockFor(int milliseconds) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += static_cast<long>(milliseconds % 1000) * 1'000'000;
    deadline.tv_sec += milliseconds / 1000 + deadline.tv_nsec / 1'000'000'000;
    deadline.tv_nsec %= 1'000'000'000;
    return sem_timedwait(&never_posted_, &deadline);
  }

  struct sigaction saved_ {};
  sem_t never_posted_;
};

TEST_F(SignalGuardTest, ASignalNotedBeforeABlockingCallInterruptsIt) {
  ASSERT_TRUE(GuardSignal(SIGUSR2).ok());
  raise(SIGUSR2);  // noted now; nobody acts on it before blocking
  EXPECT_EQ(g_noted.load(), 1);
  // Without the guard this waits the whole 5 s and times out.
  EXPECT_EQ(BlockFor(5000), -1);
  EXPECT_EQ(errno, EINTR);
  EXPECT_GE(g_noted.load(), 2);  // the resend reached the chained handler
}

TEST_F(SignalGuardTest, AnAcknowledgedSignalIsNotSentAgain) {
  ASSERT_TRUE(GuardSignal(SIGUSR2).ok());
  raise(SIGUSR2);
  AcknowledgeSignal();  // the handler ran
  EXPECT_EQ(BlockFor(200), -1);
  EXPECT_EQ(errno, ETIMEDOUT);
  EXPECT_EQ(g_noted.load(), 1);
}

TEST_F(SignalGuardTest, ItsThreadIsNamed) {
  ASSERT_TRUE(GuardSignal(SIGUSR2).ok());
  EXPECT_TRUE(testing::WaitForThreadNamed("dc-signal-guard"));
}

TEST_F(SignalGuardTest, GuardingTwiceKeepsOneWrapper) {
  ASSERT_TRUE(GuardSignal(SIGUSR2).ok());
  ASSERT_TRUE(GuardSignal(SIGUSR2).ok());  // e.g. again in a forked child
  raise(SIGUSR2);
  AcknowledgeSignal();
  EXPECT_EQ(g_noted.load(), 1);  // chained once, not to itself
}

TEST(SignalGuard, ASignalWithoutAHandlerIsRefused) {
  struct sigaction saved {};
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR2, &default_action, &saved), 0);
  EXPECT_EQ(GuardSignal(SIGUSR2).message(), "the signal has no handler to guard");
  EXPECT_EQ(GuardSignal(0).message(), "no such signal");
  sigaction(SIGUSR2, &saved, nullptr);
}

}  // namespace
}  // namespace deepcontext::profiler
