"""Profiles the current process from interpreter start to exit.

Imported by the bootstrap sitecustomize that `deepcontext run` puts on
PYTHONPATH. Everything here must leave the program's behaviour unchanged:
output, exit status and signals; a failure of the profiler becomes a warning
on stderr, never an exception in the user's code.

Profiles are written at normal exit, sys.exit, unhandled exceptions
(atexit), SIGTERM (a handler that writes and then dies of the same signal),
and os._exit (used by multiprocessing children such as DataLoader workers).
Each process writes its own file; see output_path().
"""

import atexit
import os
import signal
import socket
import sys

from . import _end_profiling, _frameworks, _runtime, _set_native

# finishing_by / finished_by: the pid whose profile is being written / is
# complete (a forked child inherits the parent's values and resets them).
# pending_signal: a SIGTERM that arrived while the profile was being
# written; the process dies of it once the profile is complete.
_state = {"path": None, "finishing_by": None, "finished_by": None, "pending_signal": None}


def output_path():
    """The file this process writes.

    The process started by `deepcontext run` writes DEEPCONTEXT_OUTPUT
    itself, exactly that path; every other process (forked or spawned
    workers, torchrun ranks) writes <stem>[.rank<R>].<pid>.dctx next to it,
    where <stem> is DEEPCONTEXT_OUTPUT without its .dctx. RANK is always
    part of the name when it is set.
    """
    base = os.environ["DEEPCONTEXT_OUTPUT"]
    stem = base[:-5] if base.endswith(".dctx") else base
    rank = os.environ.get("RANK")
    is_root = str(os.getpid()) == os.environ.get("DEEPCONTEXT_ROOT_PID")
    if is_root and not rank:
        return base
    if rank:
        stem += ".rank" + rank
    if not is_root:
        stem += ".%d" % os.getpid()
    return stem + ".dctx"


def _tell_launcher(event, detail=""):
    """Tells `deepcontext run` (DEEPCONTEXT_RUN_SOCKET, an abstract datagram
    socket) that this process started, wrote its profile or lost it, so that
    its list of written profiles is exact. Best effort: without the
    launcher (a process that outlived it) nothing is sent."""
    name = os.environ.get("DEEPCONTEXT_RUN_SOCKET")
    if not name:
        return
    message = ("%s\t%d\t%s" % (event, os.getpid(), detail)).encode("utf-8", "replace")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
            # The launcher's queue holds few datagrams (net.unix.max_dgram_qlen)
            # and it drains it every 100 ms: many workers at once wait a little.
            sender.settimeout(2.0)
            sender.sendto(message, b"\0" + name.encode())
    except OSError:
        pass


def _warn(message):
    try:
        sys.stderr.write("deepcontext: warning: %s\n" % message)
        sys.stderr.flush()
    except Exception:
        pass


def finish(end_profiling=False):
    """Writes this process's profile (once per process).

    At normal exit (`end_profiling`) profiling ends first: that waits for the
    GPU work still running, so that its records are in the profile, and ends
    the trace windows' thread before the interpreter and the CUDA libraries
    tear down (a window that attached or detached CUPTI during their teardown
    could crash the exit: a segmentation fault after the profile was written,
    seen on the H200). SIGTERM and os._exit end the process before anything
    tears down, and there a wait for the GPU could hang on a collective that
    a lost peer never completes: they only write.

    A SIGTERM that arrives while this runs (a multiprocessing pool
    terminating a worker that is already exiting) waits for the profile to
    be complete, then ends the process."""
    if _state["finishing_by"] == os.getpid() or _state["path"] is None:
        return
    _state["finishing_by"] = os.getpid()
    try:
        if end_profiling and _runtime.is_active():
            _end_profiling()
    except Exception as error:
        _warn("could not end profiling cleanly: %s" % error)
    try:
        _runtime.write(_state["path"])
        _tell_launcher("wrote", _state["path"])
    except Exception as error:
        _warn("could not write the profile: %s" % error)
        _tell_launcher("lost", "could not write %s: %s" % (_state["path"], error))
    _state["finished_by"] = os.getpid()
    if _state["pending_signal"] is not None:
        _die_of(_state["pending_signal"])


def _die_of(signum):
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _on_sigterm(signum, frame):
    _runtime.signal_handled()  # the guard stops sending it again
    pid = os.getpid()
    if _state["finishing_by"] == pid and _state["finished_by"] != pid:
        # This handler interrupted finish() (or runs beside it in another
        # thread): the profile is not complete yet, finish() ends the
        # process once it is.
        _state["pending_signal"] = signum
        return
    finish()
    _die_of(signum)


def _wrap_os_exit():
    real_exit = os._exit

    def _exit(status):
        finish()
        real_exit(status)

    _exit.__doc__ = real_exit.__doc__
    os._exit = _exit


def _after_fork_in_child():
    # The runtime already dropped the parent's samples in its own fork
    # handler; the child only needs its own file name.
    _state["path"] = output_path()
    _state["finishing_by"] = _state["finished_by"] = _state["pending_signal"] = None
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:
        _guard_sigterm()  # the guard's thread did not survive the fork
    _tell_launcher("started")


def _guard_sigterm():
    """Python runs _on_sigterm only when the main thread next checks for
    signals: a SIGTERM that arrives just before it blocks in a C call (a
    multiprocessing pool's worker waiting on the task queue's lock) would be
    lost, and the pool's exit would wait for that worker for ever. The
    runtime's guard sends it again until the handler has run."""
    try:
        _runtime.guard_signal(signal.SIGTERM)
    except Exception as error:
        _warn("SIGTERM may go unnoticed in blocking calls: %s" % error)


def _record_metadata():
    _runtime.set_metadata("python_version", sys.version.split()[0])
    _runtime.set_metadata("python_executable", sys.executable)
    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        if key in os.environ:
            _runtime.set_metadata(key.lower(), os.environ[key])


def _set_trace_windows_from_environment():
    """deepcontext run --trace-fraction F --trace-window-ms W. A bad value is
    reported and the whole run traced."""
    fraction = os.environ.get("DEEPCONTEXT_TRACE_FRACTION")
    if not fraction:
        return
    window = os.environ.get("DEEPCONTEXT_TRACE_WINDOW_MS") or _runtime.DEFAULT_TRACE_WINDOW_MS
    try:
        _runtime.set_trace_windows(fraction, window)
    except ValueError as error:
        _warn("tracing the whole run: DEEPCONTEXT_TRACE_FRACTION=%s, "
              "DEEPCONTEXT_TRACE_WINDOW_MS=%s: %s" % (fraction, window, error))


def main():
    try:
        _set_trace_windows_from_environment()
        _runtime.start()
        if os.environ.get("DEEPCONTEXT_NATIVE") == "1":
            _set_native(True)  # deepcontext run --native
        # deepcontext run --no-cpu-time, --exact-cpu-time, --sampled-cpu-time
        cpu_time = os.environ.get("DEEPCONTEXT_CPU_TIME")
        if cpu_time in ("off", "exact", "sampled"):
            _runtime.set_op_cpu_time(cpu_time)
        _record_metadata()
    except Exception as error:
        _warn("profiling disabled: %s" % error)
        return
    _state["path"] = output_path()
    atexit.register(finish, True)
    try:
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_sigterm)
            _guard_sigterm()
    except ValueError:
        pass  # not the main thread of the main interpreter
    _wrap_os_exit()
    os.register_at_fork(after_in_child=_after_fork_in_child)
    # From here on, every way out writes the profile or says why not.
    _tell_launcher("started")
    _frameworks.attach()
