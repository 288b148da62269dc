// Blocks every signal on the calling thread for its lifetime, so that a
// thread created meanwhile starts with all of them blocked: the program's
// signals (Ctrl-C, SIGTERM, ...) must never be delivered to one of the
// profiler's own threads, which would swallow or delay them.
#pragma once

#include <pthread.h>
#include <signal.h>

namespace deepcontext {

class AllSignalsBlocked {
 public:
  AllSignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous_);
  }
  ~AllSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  AllSignalsBlocked(const AllSignalsBlocked&) = delete;
  AllSignalsBlocked& operator=(const AllSignalsBlocked&) = delete;

 private:
  sigset_t previous_;
};

}  // namespace deepcontext
