// The GPU backend's lifecycle (runtime/cupti/backend_lifecycle.h): the
// transition table itself, and the states the backend goes through when
// driven through the fake CUPTI and driver (fake_backend_test.h), for
// legal requests and for requests that fit no transition.
#include "runtime/cupti/backend_lifecycle.h"

#include <cupti.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <set>
#include <string>
#include <thread>
#include <utility>

#include "tests/unit/runtime/cupti/fake_backend_test.h"
#include "tests/unit/runtime/cupti/fake_cupti.h"

namespace deepcontext::cupti {

// gtest prints states by name.
void PrintTo(BackendLifecycle state, std::ostream* out) { *out << LifecycleName(state); }

namespace {

using L = BackendLifecycle;
constexpr L kAll[] = {L::kIdle,     L::kStarting, L::kTracing, L::kPaused,
                      L::kDetached, L::kEnded,    L::kStopped, L::kReleased};

TEST(BackendLifecycleTable, AllowsExactlyTheDocumentedTransitions) {
  const std::set<std::pair<L, L>> legal = {
      {L::kIdle, L::kStarting},     {L::kIdle, L::kStopped},
      {L::kStarting, L::kTracing},  {L::kStarting, L::kStopped},
      {L::kTracing, L::kPaused},    {L::kTracing, L::kStopped},
      {L::kPaused, L::kTracing},    {L::kPaused, L::kDetached},
      {L::kPaused, L::kEnded},      {L::kPaused, L::kStopped},
      {L::kDetached, L::kTracing},  {L::kDetached, L::kEnded},
      {L::kDetached, L::kReleased}, {L::kEnded, L::kReleased},
      {L::kStopped, L::kReleased},
  };
  for (L from : kAll) {
    for (L to : kAll) {
      EXPECT_EQ(IsLegalTransition(from, to), legal.count({from, to}) == 1)
          << LifecycleName(from) << " -> " << LifecycleName(to);
    }
  }
}

TEST(BackendLifecycleTable, ReleasedIsFinalAndEveryStateHasAName) {
  std::set<std::string_view> names;
  for (L state : kAll) {
    EXPECT_FALSE(IsLegalTransition(L::kReleased, state));
    EXPECT_FALSE(IsLegalTransition(state, state)) << LifecycleName(state);
    names.insert(LifecycleName(state));
  }
  EXPECT_EQ(names.size(), std::size(kAll));
  EXPECT_EQ(names.count("unknown"), 0u);
}

}  // namespace

namespace fake {
namespace {

constexpr int64_t kLongPauseNs = 100'000'000;

class BackendLifecycleTest : public FakeBackendTest {
 protected:
  // A CUDA call made on another thread, as the program's would be: while
  // a detach is asked for, its exit detaches CUPTI.
  static void CallOnAnotherThread() {
    std::thread thread([] { FakeCuptiCallExit(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel); });
    thread.join();
  }
};

TEST_F(BackendLifecycleTest, StartPauseResumeStopAndDetach) {
  MakeState();
  EXPECT_EQ(state_->lifecycle(), L::kIdle);
  ASSERT_TRUE(IsOk(state_->Start()));
  EXPECT_EQ(state_->lifecycle(), L::kTracing);
  state_->SetTracing(false);
  EXPECT_EQ(state_->lifecycle(), L::kPaused);
  state_->SetTracing(true);
  EXPECT_EQ(state_->lifecycle(), L::kTracing);
  state_->Stop();
  EXPECT_EQ(state_->lifecycle(), L::kStopped);
  EXPECT_EQ(FakeCupti().finalizes, 0);
  state_->Detach();
  EXPECT_EQ(state_->lifecycle(), L::kReleased);
  EXPECT_EQ(FakeCupti().finalizes, 1);
}

// Detached in a pause (kPaused -> kDetached), attached again at the next
// window (kDetached -> kTracing).
TEST_F(BackendLifecycleTest, ALongPauseDetachesAndTheNextWindowAttachesAgain) {
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  state_->SetShortestPause(kLongPauseNs);
  state_->SetTracing(false);
  EXPECT_EQ(state_->lifecycle(), L::kPaused);  // asked, not detached yet
  CallOnAnotherThread();
  ASSERT_EQ(FakeCupti().finalizes, 1);
  state_->SetTracing(true);
  EXPECT_EQ(state_->lifecycle(), L::kTracing);
  EXPECT_EQ(FakeCupti().subscribes, 2);
  state_->Stop();
  EXPECT_EQ(state_->lifecycle(), L::kStopped);
}

// Stopped while a pause had detached CUPTI (kPaused -> kDetached ->
// kReleased): no second detach, not one more CUPTI call.
TEST_F(BackendLifecycleTest, StoppingWhileDetachedReleasesWithoutCallingCupti) {
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  state_->SetShortestPause(kLongPauseNs);
  state_->SetTracing(false);
  CallOnAnotherThread();
  ASSERT_EQ(FakeCupti().finalizes, 1);
  const int calls = FakeCuptiCalls();
  state_->Stop();
  EXPECT_EQ(state_->lifecycle(), L::kReleased);
  state_->Detach();
  state_->Metadata();
  EXPECT_EQ(state_->lifecycle(), L::kReleased);
  EXPECT_EQ(FakeCupti().finalizes, 1);
  EXPECT_EQ(FakeCuptiCalls(), calls);
}

// Another client subscribed in the pause: attaching again fails
// (kDetached -> kEnded); further windows change nothing; stopping
// releases (kEnded -> kReleased).
TEST_F(BackendLifecycleTest, AFailedAttachEndsTracingForGood) {
  MakeState();
  ASSERT_TRUE(IsOk(state_->Start()));
  state_->SetShortestPause(kLongPauseNs);
  state_->SetTracing(false);
  CallOnAnotherThread();
  FakeCupti().other_client = true;
  state_->SetTracing(true);
  EXPECT_EQ(state_->lifecycle(), L::kEnded);
  state_->SetTracing(false);
  EXPECT_EQ(state_->lifecycle(), L::kEnded);
  state_->SetTracing(true);
  EXPECT_EQ(state_->lifecycle(), L::kEnded);
  state_->Stop();
  EXPECT_EQ(state_->lifecycle(), L::kReleased);
}

// A failed Start leaves kStarting; stopping then goes to kStopped and
// stopping detaches nothing.
TEST_F(BackendLifecycleTest, AFailedStartStops) {
  FakeCupti().other_client = true;
  MakeState();
  EXPECT_FALSE(state_->Start().ok());
  EXPECT_EQ(state_->lifecycle(), L::kStarting);
  state_->SetTracing(false);  // not started: nothing to pause
  EXPECT_EQ(state_->lifecycle(), L::kStarting);
  state_->Stop();
  EXPECT_EQ(state_->lifecycle(), L::kStopped);
  state_->Detach();
  EXPECT_EQ(state_->lifecycle(), L::kStopped);
  EXPECT_EQ(FakeCupti().finalizes, 0);
}

// Requests that fit no transition change nothing and call no CUPTI.
TEST_F(BackendLifecycleTest, RequestsOutOfOrderChangeNothing) {
  MakeState();
  const int before = FakeCuptiCalls();
  state_->SetTracing(false);  // pause before Start
  state_->SetTracing(true);   // resume before Start
  EXPECT_EQ(state_->lifecycle(), L::kIdle);
  EXPECT_EQ(FakeCuptiCalls(), before);

  ASSERT_TRUE(IsOk(state_->Start()));
  state_->SetTracing(true);  // resume while tracing
  EXPECT_EQ(state_->lifecycle(), L::kTracing);
  EXPECT_EQ(state_->Start().message(),
            "no GPU activity recorded: the GPU backend was started already");
  EXPECT_EQ(state_->lifecycle(), L::kTracing);
  EXPECT_EQ(FakeCupti().subscribes, 1);
  state_->SetTracing(false);
  const int paused = FakeCuptiCalls();
  state_->SetTracing(false);  // pause while paused
  EXPECT_EQ(state_->lifecycle(), L::kPaused);
  EXPECT_EQ(FakeCuptiCalls(), paused);

  state_->Stop();
  const int stopped = FakeCuptiCalls();
  state_->Stop();
  state_->SetTracing(true);  // resume after Stop
  state_->SetTracing(false);
  EXPECT_EQ(state_->Start().message(),
            "no GPU activity recorded: the GPU backend was started already");
  EXPECT_EQ(state_->lifecycle(), L::kStopped);
  EXPECT_EQ(FakeCuptiCalls(), stopped);
}

// Stopping before Start (kIdle -> kStopped) takes no DLMonitor reference
// and makes no CUPTI call.
TEST_F(BackendLifecycleTest, StoppingBeforeStartStopsAtOnce) {
  MakeState();
  const int before = FakeCuptiCalls();
  state_->Stop();
  EXPECT_EQ(state_->lifecycle(), L::kStopped);
  EXPECT_EQ(FakeCuptiCalls(), before);
  state_->Detach();
  EXPECT_EQ(FakeCupti().finalizes, 0);
}

}  // namespace
}  // namespace fake
}  // namespace deepcontext::cupti
