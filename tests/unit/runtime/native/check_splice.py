"""Checks the merge of native and Python frames under one interpreter.

Usage: check_splice.py SPLICE_PROBE_LIBRARY

Python calls the probe's native chain a() -> b() -> c() through ctypes; c()
calls back into Python (on_c), which calls inner() (a Python-to-Python call:
the same eval-loop activation on 3.11+), which captures. The merged path must
hold the Python frames in the interpreter's own order, a, b, c adjacent
between the caller's line and on_c, inner right after on_c, and no frame of
the interpreter's eval loop. Exits non-zero with the path on a mismatch.
"""

import ctypes
import sys

CALLBACK = ctypes.CFUNCTYPE(None)
BUFFER = ctypes.create_string_buffer(1 << 20)
RESULT = {}
PROBE = None


def python_stack(frame):
    """(function, line) of `frame` and its callers, outermost first."""
    frames = []
    while frame is not None:
        code = frame.f_code
        frames.append((getattr(code, "co_qualname", code.co_name), frame.f_lineno))
        frame = frame.f_back
    frames.reverse()
    return frames


def capture():
    # One line, so that f_lineno is the line of the probe call.
    count, RESULT["expected"] = PROBE.dc_splice_probe_capture(BUFFER, len(BUFFER)), python_stack(sys._getframe())  # noqa: E501
    assert count > 0, count
    RESULT["path"] = [tuple(line.split("\t"))
                      for line in BUFFER.value.decode().splitlines()]


def inner():
    capture()


def on_c():
    inner()


def outer(callback):
    PROBE.dc_splice_probe_chain(callback)


def main():
    global PROBE
    PROBE = ctypes.CDLL(sys.argv[1])
    PROBE.dc_splice_probe_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
    PROBE.dc_splice_probe_capture.argtypes = [ctypes.c_char_p, ctypes.c_int]
    PROBE.dc_splice_probe_chain.argtypes = [CALLBACK]
    why = ctypes.create_string_buffer(256)
    if not PROBE.dc_splice_probe_init(why, len(why)):
        print("probe init failed: %s" % why.value.decode())
        return 1
    outer(CALLBACK(on_c))
    path = RESULT["path"]
    shown = "\n".join("  " + " ".join(entry) for entry in path)
    python = [(entry[1], int(entry[2])) for entry in path if entry[0] == "P"]
    # The Python frames reached from the module: the ones the reader sees.
    expected = RESULT["expected"][-len(python):]
    failures = []
    if python != expected:
        failures.append("python frames %s != %s" % (python, expected))
    names = [entry[1] for entry in path]
    chain = []
    for prefix in ("splice_probe::a(", "splice_probe::b(", "splice_probe::c("):
        found = [i for i, name in enumerate(names) if name.startswith(prefix)]
        if len(found) != 1:
            failures.append("%s found %d times" % (prefix, len(found)))
        chain += found
    if not failures:
        outer_at = names.index("outer")
        on_c_at = names.index("on_c")
        inner_at = names.index("inner")
        if chain != [chain[0], chain[0] + 1, chain[0] + 2]:
            failures.append("a, b, c not adjacent")
        if not outer_at < chain[0] < chain[2] < on_c_at:
            failures.append("a..c not between outer and on_c")
        if inner_at != on_c_at + 1 or names[inner_at + 1] != "capture":
            failures.append("on_c > inner > capture are not adjacent")
        if not path[-1][1].startswith("dc_splice_probe_capture"):
            failures.append("innermost frame is %s" % (path[-1],))
    eval_frames = [n for n in names if "EvalFrame" in n]
    if eval_frames:
        failures.append("interpreter frames left: %s" % eval_frames)
    print("Python %s: %d merged frames" % (sys.version.split()[0], len(path)))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures) + "\npath:\n" + shown)
        return 1
    print(shown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
