"""DeepContext: a calling-context profiler for deep-learning programs.

Profile a region of a program::

    import deepcontext
    with deepcontext.profile("out.dctx"):
        train_one_epoch()

or a whole program from the shell: ``deepcontext run -o out.dctx -- python3 train.py``
(``python3 -m deepcontext run ...`` does the same). Read a profile with
``deepcontext report out.dctx``, or from Python with ``deepcontext.load``.
"""

# Imported under private names: the package's namespace is its API only.
import contextlib as _contextlib
import ctypes as _ctypes
import os as _os
import sys as _sys

__all__ = ["profile", "is_tracing", "load", "rule", "Finding", "__version__"]
__version__ = "0.1.0"

from ._profile import Finding, load, rule  # noqa: E402  (reading profiles)


@_contextlib.contextmanager
def profile(path="deepcontext.dctx", native=False, cpu_time="sampled",
            trace_fraction=1.0, trace_window_ms=50):
    """Profiles the enclosed block and writes the profile to `path`.

    By default (`cpu_time="sampled"`) a sampling thread charges each
    millisecond of a thread's CPU time to the op running then, without a
    system call per op. `cpu_time="exact"` (or True) reads the thread's CPU
    clock at every op's entry and exit, like `deepcontext run
    --exact-cpu-time`: exact for every op, at two system calls per op.
    `cpu_time="off"` (or False) times ops by wall time only, like
    `--no-cpu-time`.

    With `native=True`, the paths of ops called from Python also hold the
    native (C/C++) frames between the Python line and the op, like
    `deepcontext run --native`; the profile's "dlmonitor" metadata then
    names the unwinder.

    With `trace_fraction` below 1, ops and GPU work are traced in windows of
    `trace_window_ms` milliseconds at random times that cover that fraction
    of the block, like `deepcontext run --trace-fraction`: between windows
    they cost what they cost without a profiler, and the profile describes
    the windows (its "trace_windows" metadata says how much they covered).

    The profile is written when the block ends, also when it raises. Inside a
    program already run by `deepcontext run`, the block's samples are part of
    that program's profile and `path` receives a copy covering the program so
    far.
    """
    from . import _frameworks, _runtime, _torch_adapter

    path = _os.fspath(path)
    nested = _runtime.is_active()
    if not nested:
        # Checked before anything changes: a bad value leaves no state behind.
        _runtime.set_trace_windows(trace_fraction, trace_window_ms)
    try:
        if native:
            _set_native(True)
        if not nested:
            _runtime.start()
    finally:
        if not nested:
            _runtime.set_trace_windows(1.0)  # for the sessions after this one
    if not nested:
        try:
            _runtime.set_op_cpu_time(cpu_time)
        except ValueError:
            _runtime.stop()
            raise
        _runtime.warn_if_gpu_blocked()
        _runtime.reset()
        _runtime.set_metadata("python_version", _sys.version.split()[0])
        _runtime.set_metadata("python_executable", _sys.executable)
        _frameworks.attach()
        _torch_adapter.enable(True)
    try:
        yield
    finally:
        if not nested:
            _end_profiling()
        try:
            _runtime.write(path)
        finally:
            if not nested:
                _runtime.set_op_cpu_time(_runtime.DEFAULT_CPU_TIME)
            if native and not nested:
                _set_native(False)


def is_tracing():
    """True while ops and GPU work are being traced: inside a profiled
    region or a program run by `deepcontext run`, and with `trace_fraction`
    below 1 only while a trace window is open. False when nothing is
    profiled."""
    from . import _runtime

    return _runtime.is_tracing()


def _end_profiling():
    """Ends the session: op interception is switched off, then the runtime
    stops (it waits for the GPU work still running)."""
    from . import _runtime, _torch_adapter

    _torch_adapter.enable(False)
    _runtime.stop()


def _set_native(on):
    """Turns native frames in op paths on or off (dlmonitor_native_enable)."""
    from . import _runtime

    lib = _runtime.library()
    lib.dlmonitor_native_enable.restype = _ctypes.c_int
    lib.dlmonitor_native_enable.argtypes = [_ctypes.c_int]
    if lib.dlmonitor_native_enable(1 if on else 0) != 0:
        raise RuntimeError("native frames could not be turned %s" % ("on" if on else "off"))
