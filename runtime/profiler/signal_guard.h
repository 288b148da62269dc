// Makes sure a Python-level signal handler runs when its signal arrives.
//
// CPython's C handler only sets a flag; the Python handler runs later, when
// the main thread next checks for signals. A signal that arrives just after
// that check and before the main thread blocks in a C call that does not
// check again (a multiprocessing lock's sem_wait) is never acted on: the
// call blocks for good. Without a profiler the default action would have
// ended the process; with the launcher's SIGTERM handler (write the profile,
// then die) a multiprocessing pool hung at exit in about one run in twelve,
// waiting for a worker that had been told to end.
//
// The guard wraps the handler installed for the signal: it chains to it,
// then wakes a guard thread, which sends the signal again to the thread that
// installed the guard (the main thread) every 20 ms until the Python handler
// says it ran (Acknowledge). Each resend interrupts the blocking call, after
// which CPython checks for signals and runs the handler.
#pragma once

#include <string>

#include "common/status.h"

namespace deepcontext::profiler {

// Guards `signum` in this process; the calling thread is the one signals are
// resent to. Call it after the Python handler is installed, and again in a
// forked child (the guard thread does not survive fork; this starts a new
// one). An error says why the guard could not be set up.
Status GuardSignal(int signum);

// The Python handler of the guarded signal ran: stop resending it.
void AcknowledgeSignal();

}  // namespace deepcontext::profiler
