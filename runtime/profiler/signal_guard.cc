#include "runtime/profiler/signal_guard.h"

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "runtime/common/all_signals_blocked.h"
#include "runtime/common/thread_name.h"

namespace deepcontext::profiler {
namespace {

// How often and how long the guard thread resends an unacknowledged signal
// (20 ms, up to 5 s: a handler that writes a large profile acknowledges
// first, so this only covers the wait for the main thread to notice).
constexpr long kResendIntervalNs = 20'000'000;
constexpr int kMaxResends = 250;

// The handlers the guard wraps, per signal; written before the wrapper is
// installed, read only by it.
struct sigaction g_previous[NSIG];
std::atomic<int> g_signum{0};
// Set by the wrapper, cleared by AcknowledgeSignal: a signal whose handler
// has not run yet.
std::atomic<bool> g_pending{false};
sem_t g_wake;
// The process whose guard thread runs (a forked child has none yet), and
// the thread signals are resent to: GuardSignal may name another while the
// guard thread resends.
pid_t g_guard_pid = 0;
std::atomic<pthread_t> g_target{};

void OnGuardedSignal(int signum, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const struct sigaction& previous = g_previous[signum];
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(signum, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
             previous.sa_handler != nullptr) {
    previous.sa_handler(signum);
  }
  // A resend finds the signal pending already: only a new one wakes the
  // guard thread. sem_post is async-signal-safe.
  if (!g_pending.exchange(true)) {
    g_signum.store(signum);
    sem_post(&g_wake);
  }
  errno = saved_errno;
}

void* GuardLoop(void*) {
  NameThisThread("dc-signal-guard");
  for (;;) {
    if (sem_wait(&g_wake) != 0) continue;  // EINTR cannot happen (blocked)
    for (int i = 0; i < kMaxResends && g_pending.load(); ++i) {
      const struct timespec interval{0, kResendIntervalNs};
      nanosleep(&interval, nullptr);
      if (g_pending.load()) pthread_kill(g_target.load(), g_signum.load());
    }
    g_pending.store(false);  // gave up, or acknowledged
  }
  return nullptr;
}

bool IsGuardWrapper(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO) != 0 &&
         action.sa_sigaction == &OnGuardedSignal;
}

}  // namespace

Status GuardSignal(int signum) {
  if (signum <= 0 || signum >= NSIG) return Status::Error("no such signal");
  struct sigaction current;
  if (sigaction(signum, nullptr, &current) != 0) {
    return Status::Error(std::string("cannot read the signal's handler: ") +
                         std::strerror(errno));
  }
  if (!IsGuardWrapper(current)) {
    if ((current.sa_flags & SA_SIGINFO) == 0 &&
        (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN)) {
      return Status::Error("the signal has no handler to guard");
    }
    if (g_signum.load() != 0 && g_signum.load() != signum) {
      return Status::Error("another signal is guarded already");
    }
    g_previous[signum] = current;
    struct sigaction wrapper = current;
    wrapper.sa_flags = (current.sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
    wrapper.sa_sigaction = &OnGuardedSignal;
    if (sigaction(signum, &wrapper, nullptr) != 0) {
      return Status::Error(std::string("cannot install the guard: ") + std::strerror(errno));
    }
  }
  g_signum.store(signum);
  g_target.store(pthread_self());
  if (g_guard_pid != getpid()) {
    g_pending.store(false);
    sem_init(&g_wake, 0, 0);
    pthread_t thread;
    const AllSignalsBlocked blocked;  // the guard thread starts without them
    if (pthread_create(&thread, nullptr, &GuardLoop, nullptr) != 0) {
      return Status::Error("cannot start the signal guard thread");
    }
    pthread_detach(thread);
    g_guard_pid = getpid();
  }
  return Status::Ok();
}

void AcknowledgeSignal() { g_pending.store(false); }

}  // namespace deepcontext::profiler
