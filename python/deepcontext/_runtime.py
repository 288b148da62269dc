"""ctypes binding of the runtime library's C API (include/deepcontext/profiler.h).

The library is loaded with RTLD_GLOBAL once per process. Calls go through
ctypes.CDLL, which releases the GIL: writing a profile does not stall the
program's other threads, and DLMonitor never needs the GIL.
"""

import ctypes
import os
import sys

from . import _framework_cupti, _paths, _xla_annotations

_lib = None


class RuntimeError_(RuntimeError):
    """An error reported by the DeepContext runtime."""


def library():
    """The loaded runtime library (loads it on first use)."""
    global _lib
    if _lib is None:
        path = _paths.runtime_library()
        lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        for name in ("deepcontext_start", "deepcontext_stop", "deepcontext_is_active",
                     "deepcontext_is_tracing", "deepcontext_reset"):
            getattr(lib, name).restype = ctypes.c_int
            getattr(lib, name).argtypes = []
        lib.deepcontext_set_op_cpu_time.restype = ctypes.c_int
        lib.deepcontext_set_op_cpu_time.argtypes = [ctypes.c_int]
        lib.deepcontext_set_trace_windows.restype = ctypes.c_int
        lib.deepcontext_set_trace_windows.argtypes = [ctypes.c_double, ctypes.c_int64]
        lib.deepcontext_set_op_switch.restype = ctypes.c_int
        lib.deepcontext_set_op_switch.argtypes = [ctypes.c_void_p]
        lib.deepcontext_write.restype = ctypes.c_int
        lib.deepcontext_write.argtypes = [ctypes.c_char_p]
        lib.deepcontext_set_metadata.restype = ctypes.c_int
        lib.deepcontext_set_metadata.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        lib.deepcontext_last_error.restype = ctypes.c_char_p
        lib.deepcontext_last_error.argtypes = []
        lib.deepcontext_version.restype = ctypes.c_char_p
        lib.deepcontext_gpu_status.restype = ctypes.c_char_p
        lib.deepcontext_gpu_status.argtypes = []
        lib.deepcontext_guard_signal.restype = ctypes.c_int
        lib.deepcontext_guard_signal.argtypes = [ctypes.c_int]
        lib.deepcontext_signal_handled.restype = None
        lib.deepcontext_signal_handled.argtypes = []
        lib.dlmonitor_python_hide_leaf_files.restype = ctypes.c_int
        lib.dlmonitor_python_hide_leaf_files.argtypes = [ctypes.c_char_p]
        lib.dlmonitor_python_hide_leaf_frames.restype = ctypes.c_int
        lib.dlmonitor_python_hide_leaf_frames.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        lib.dlmonitor_python_mark_compile_frames.restype = ctypes.c_int
        lib.dlmonitor_python_mark_compile_frames.argtypes = [ctypes.c_char_p,
                                                             ctypes.c_char_p]
        lib.dlmonitor_describe.restype = ctypes.c_char_p
        lib.deepcontext_xla_register_module.restype = ctypes.c_int
        lib.deepcontext_xla_register_module.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        _lib = lib
    return _lib


def _check(result):
    if result != 0:
        message = library().deepcontext_last_error().decode("utf-8", "replace")
        raise RuntimeError_(message or "unknown runtime error")


def check_environment():
    """Raises ValueError for a DEEPCONTEXT_* setting the runtime would
    otherwise ignore: a profile measured with another setting than asked
    for would mislead."""
    text = os.environ.get("DEEPCONTEXT_CPU_SAMPLE_US")
    if text:
        # Same rule as the runtime (runtime/profiler/op_metrics.cc) and
        # `deepcontext run`: whole microseconds, 10 us to 1 s.
        if not (text.isascii() and text.isdigit() and 10 <= int(text) <= 1000000):
            raise ValueError("DEEPCONTEXT_CPU_SAMPLE_US=%s is not a whole number of "
                             "microseconds from 10 to 1000000" % text)


def start():
    check_environment()
    cupti = _framework_cupti.preload() or os.environ.get("DEEPCONTEXT_CUPTI_LIBRARY")
    # Before the program's first NVTX call (JAX's first compilation).
    _xla_annotations.route_nvtx(_paths.runtime_library(), cupti)
    _check(library().deepcontext_start())


def register_xla_module(hlo_text):
    """Hands a compiled module's HLO text to the runtime; returns how many
    of its instructions have source lines."""
    data = hlo_text.encode("utf-8", "replace")
    return library().deepcontext_xla_register_module(data, len(data))


def stop():
    _check(library().deepcontext_stop())


def is_active():
    return bool(library().deepcontext_is_active())


def is_tracing():
    return bool(library().deepcontext_is_tracing())


def set_op_switch(address):
    """Registers the adapter function that pauses and resumes op interception
    between trace windows (an address; None for none)."""
    _check(library().deepcontext_set_op_switch(address))


def reset():
    _check(library().deepcontext_reset())


def guard_signal(signum):
    """Makes sure the Python handler just installed for `signum` runs even
    when the signal arrives as the main thread blocks in a C call (see
    deepcontext_guard_signal); call signal_handled() first in the handler."""
    _check(library().deepcontext_guard_signal(int(signum)))


def signal_handled():
    library().deepcontext_signal_handled()


def write(path):
    _check(library().deepcontext_write(os.fsencode(path)))


def set_metadata(key, value):
    _check(library().deepcontext_set_metadata(
        str(key).encode("utf-8"), str(value).encode("utf-8")))


DEFAULT_CPU_TIME = "sampled"
DEFAULT_TRACE_WINDOW_MS = 50
_CPU_TIME_MODES = {"sampled": 2, "exact": 1, True: 1, "off": 0, False: 0}


def set_trace_windows(fraction, window_ms=DEFAULT_TRACE_WINDOW_MS):
    """Traces the next sessions in windows of `window_ms` covering `fraction`
    of the run (1: everything). Raises ValueError for values out of range."""
    try:
        fraction = float(fraction)
        window_us = int(round(float(window_ms) * 1000))
    except (TypeError, ValueError):
        raise ValueError("trace fraction and window must be numbers (got %r, %r)"
                         % (fraction, window_ms)) from None
    lib = library()
    if lib.deepcontext_set_trace_windows(fraction, window_us) != 0:
        raise ValueError(lib.deepcontext_last_error().decode("utf-8", "replace"))


def set_op_cpu_time(mode):
    """How ops get thread CPU time: "sampled" (the default: a 1 ms sampling
    thread, no system call per op), "exact" or True (read at every op's
    entry and exit: two system calls per op) or "off"/False (none)."""
    # Only str and bool: 1 == True would otherwise pass as a mode.
    value = _CPU_TIME_MODES.get(mode) if isinstance(mode, (str, bool)) else None
    if value is None:
        raise ValueError("cpu_time must be 'sampled', 'exact' (or True) or 'off' "
                         "(or False), not %r" % (mode,))
    _check(library().deepcontext_set_op_cpu_time(value))


def hide_leaf_files(substring):
    library().dlmonitor_python_hide_leaf_files(substring.encode("utf-8"))


def hide_leaf_frames(file_substring, function):
    """Like hide_leaf_files, for the frames of `function` only."""
    library().dlmonitor_python_hide_leaf_frames(file_substring.encode("utf-8"),
                                                function.encode("utf-8"))


def mark_compile_frames(file_substring, function=""):
    """Makes Python frames of `function` ("" = any) in files containing
    `file_substring` compilation work: their GPU and op work goes below a
    [compile] phase."""
    library().dlmonitor_python_mark_compile_frames(file_substring.encode("utf-8"),
                                                   function.encode("utf-8"))


def emit_function_address():
    """Address of dlmonitor_event_emit, handed to framework adapters."""
    return ctypes.cast(library().dlmonitor_event_emit, ctypes.c_void_p).value


def gpu_status():
    """What GPU collection does in this session, in one line."""
    return library().deepcontext_gpu_status().decode("utf-8", "replace")


def warn_if_gpu_blocked():
    """Says so on stderr when another CUPTI client keeps GPU activity out:
    the numbers would otherwise silently lack the GPU."""
    status = gpu_status()
    if "another CUPTI client" in status:
        sys.stderr.write("deepcontext: warning: %s\n" % status)
        sys.stderr.flush()


def version():
    return library().deepcontext_version().decode()
