/*
 * Control API of the DeepContext runtime (libdeepcontext.so).
 *
 * Used by the `deepcontext` Python package (through ctypes) and usable from
 * any host program: start a session, let DLMonitor producers emit events,
 * write the profile. One session per process at a time.
 *
 * All functions are thread-safe, never throw, and do not need the GIL.
 * Functions returning int return 0 on success and -1 on error; the error text
 * is then available from deepcontext_last_error().
 */
#ifndef DEEPCONTEXT_PROFILER_H_
#define DEEPCONTEXT_PROFILER_H_

#include <stddef.h>
#include <stdint.h>

#if defined(DLMONITOR_BUILDING_LIBRARY)
#define DEEPCONTEXT_API __attribute__((visibility("default")))
#else
#define DEEPCONTEXT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Starts collecting: initializes DLMonitor and registers the profiler's
   callbacks. Fails if a session is already active. */
DEEPCONTEXT_API int deepcontext_start(void);

/* Stops collecting; collected data is kept until written or reset. */
DEEPCONTEXT_API int deepcontext_stop(void);

/* 1 while a session collects, else 0. */
DEEPCONTEXT_API int deepcontext_is_active(void);

/* 1 while a session traces ops and GPU work: whenever it collects, or with
   trace windows (deepcontext_set_trace_windows) while a window is open;
   else 0. */
DEEPCONTEXT_API int deepcontext_is_tracing(void);

/* Writes everything collected so far to `path` (atomically: temp file +
   rename). May be called while collecting. */
DEEPCONTEXT_API int deepcontext_write(const char* path);

/* Adds or replaces a metadata entry written with the profile. */
DEEPCONTEXT_API int deepcontext_set_metadata(const char* key,
                                             const char* value);

/* Drops collected samples (contexts are kept) and restarts the clock of the
   session, e.g. at the start of a profiled region. */
DEEPCONTEXT_API int deepcontext_reset(void);

/* How ops get thread CPU time: 2 (default) sampled, a sampling thread
   charges each thread's CPU time to the op running at each 1 ms tick (no
   system call per op; statistical; CPU outside ops goes to the thread's
   node); 1 exact, read at each op's entry and exit (two clock system calls
   per op, the largest per-op cost of the profiler); 0 off, ops keep calls
   and wall time. The profile's "op_cpu_time" metadata names the mode.
   Applies to ops entered afterwards. */
DEEPCONTEXT_API int deepcontext_set_op_cpu_time(int mode);

/* Traces in windows instead of the whole run: windows of `window_us`
   microseconds (1 ms to 60 s) at random times, covering `fraction` (0.001
   to 1) of the run. Between windows ops and GPU work are not intercepted,
   so their per-event costs are paid in windows only; the profile covers the
   windows, and its "trace_windows" and "traced_ns" metadata say how much of
   the run that was. 1 (the default) traces everything. Set it before
   deepcontext_start(); it applies to the sessions started afterwards. */
DEEPCONTEXT_API int deepcontext_set_trace_windows(double fraction,
                                                  int64_t window_us);

/* The function that pauses (0) and resumes (1) a framework adapter's op
   interception between trace windows; NULL for none. */
typedef int (*deepcontext_op_switch_fn)(int on);
DEEPCONTEXT_API int deepcontext_set_op_switch(deepcontext_op_switch_fn op_switch);

/* Guards the handler installed for `signum` (a Python-level one, which
   only runs when the main thread next checks for signals): the signal is
   sent again to the calling thread every 20 ms, up to 5 s, until
   deepcontext_signal_handled() says the handler ran, so that a signal that
   arrived just before the main thread blocked in a C call is not lost. Call
   it from the main thread after installing the handler, and again in a
   forked child. Fails if the signal has no handler. */
DEEPCONTEXT_API int deepcontext_guard_signal(int signum);

/* The guarded signal's handler ran: stop sending it again. */
DEEPCONTEXT_API void deepcontext_signal_handled(void);

/* One line on GPU collection in the current (or last) session: what is
   traced, or "no GPU activity recorded: <reason>". Valid until the next
   deepcontext_start(). */
DEEPCONTEXT_API const char* deepcontext_gpu_status(void);

/* The message of the last failed call on this thread ("" if none). */
DEEPCONTEXT_API const char* deepcontext_last_error(void);

/* Hands over the HLO text of a module JAX compiled (jaxlib
   HloModule.to_string(), with its stack frame index): the source lines of its
   instructions then sit between the line that calls the jitted function and
   its operations (runtime/xla/hlo_sources.h). Any time, also before
   deepcontext_start(). Returns how many instructions have source lines. */
DEEPCONTEXT_API int deepcontext_xla_register_module(const char* hlo_text, size_t length);

/* Version of the runtime, e.g. "0.1.0". */
DEEPCONTEXT_API const char* deepcontext_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DEEPCONTEXT_PROFILER_H_ */
