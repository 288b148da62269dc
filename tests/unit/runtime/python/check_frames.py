"""Checks the GIL-free frame reader against the interpreter's own stack view.

Usage:
    check_frames.py PROBE_LIBRARY                       # supported versions
    check_frames.py PROBE_LIBRARY --expect-unsupported  # e.g. CPython 3.8
    check_frames.py PROBE_LIBRARY --benchmark           # prints capture cost

PROBE_LIBRARY is libpython_frame_probe.so. ctypes.CDLL releases the GIL around
each call, which is the situation of a torch op callback. Every scenario
captures inside the probe and, on the same source line, walks the same stack
with sys._getframe(); the two must agree on function (co_qualname on 3.11+,
co_name before), file and line. Files and lines are also cross-checked against
traceback.extract_stack(). Exits non-zero with a diff on any mismatch.

Kept free of syntax newer than 3.6 so that old interpreters reach the
"not supported" check.
"""

import asyncio
import ctypes
import sys
import threading
import traceback

BUFFER_LENGTH = 1 << 20
FULL_DEPTH = 4096

PROBE = None
BUFFER = ctypes.create_string_buffer(BUFFER_LENGTH)
FAILURES = []


def load_probe(path):
    lib = ctypes.CDLL(path)
    lib.dc_probe_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.dc_probe_init.restype = ctypes.c_int
    lib.dc_probe_capture.argtypes = [ctypes.c_char_p, ctypes.c_int,
                                     ctypes.c_int]
    lib.dc_probe_capture.restype = ctypes.c_int
    lib.dc_probe_capture_on_native_thread.argtypes = []
    lib.dc_probe_capture_on_native_thread.restype = ctypes.c_int
    lib.dc_probe_time_capture.argtypes = [ctypes.c_int, ctypes.c_int,
                                          ctypes.POINTER(ctypes.c_int)]
    lib.dc_probe_time_capture.restype = ctypes.c_double
    lib.dc_probe_time_resolve.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.dc_probe_time_resolve.restype = ctypes.c_double
    return lib


def function_name(code):
    return getattr(code, "co_qualname", code.co_name)


def expected_stack(frame):
    """The stack from `frame` outward, outermost first, as the probe prints it.

    Must be called on the line that called the probe: f_lineno of `frame` is
    read now.
    """
    innermost = frame
    frames = []
    while frame is not None:
        frames.append((function_name(frame.f_code), frame.f_code.co_filename,
                       frame.f_lineno))
        frame = frame.f_back
    frames.reverse()
    summary = traceback.extract_stack(innermost)
    return frames, [(entry.filename, entry.lineno) for entry in summary]


def parse_capture(count):
    if count < 0:
        return count, []
    lines = BUFFER.value.decode("utf-8").splitlines()
    frames = []
    for line in lines:
        function, filename, lineno = line.split("\t")
        frames.append((function, filename, int(lineno)))
    return count, frames


def capture_here(max_frames=FULL_DEPTH):
    """Captures with the probe; returns (count, captured, expected, tb)."""
    # One line on purpose: the probe call and the reference walk must see the
    # same f_lineno for this frame.
    count = PROBE.dc_probe_capture(BUFFER, BUFFER_LENGTH, max_frames); expected, from_traceback = expected_stack(sys._getframe())  # noqa: E501,E702
    count, captured = parse_capture(count)
    return count, captured, expected, from_traceback


def format_frames(frames):
    return "\n".join("    %-50s %s:%d" % (f, fn, ln) for f, fn, ln in frames)


def check(name, result, max_frames=FULL_DEPTH):
    count, captured, expected, from_traceback = result
    problems = []
    if count < 0:
        problems.append("probe returned %d (resolve failure or buffer)" % count)
    if [(fn, ln) for _, fn, ln in expected] != from_traceback:
        problems.append("sys._getframe and traceback.extract_stack disagree:\n"
                        "  getframe:  %s\n  traceback: %s" % (
                            [(fn, ln) for _, fn, ln in expected],
                            from_traceback))
    want = expected[-max_frames:] if max_frames > 0 else []
    if count != len(captured):
        problems.append("count %d but %d lines" % (count, len(captured)))
    if captured != want:
        diff = []
        for i in range(max(len(captured), len(want))):
            got = captured[i] if i < len(captured) else None
            exp = want[i] if i < len(want) else None
            mark = "  " if got == exp else "!!"
            diff.append("  %s %3d got %s\n         want %s" % (mark, i, got, exp))
        problems.append("frames differ (max_frames=%d, got %d, want %d):\n%s"
                        % (max_frames, len(captured), len(want),
                           "\n".join(diff)))
    if problems:
        FAILURES.append("%s:\n  %s" % (name, "\n  ".join(problems)))
        print("FAIL %s" % name)
    else:
        print("ok   %s (%d frames)" % (name, count))


# --- scenarios ---------------------------------------------------------------

def nested_a():
    return nested_b()


def nested_b():
    return nested_c()


def nested_c():
    return capture_here()


class Model:
    def forward(self):
        return self.layer()

    def layer(self):
        def inner():
            return capture_here()
        return inner()

    @staticmethod
    def static():
        return capture_here()

    @classmethod
    def klass(cls):
        return capture_here()


def in_lambda():
    call = lambda: capture_here()  # noqa: E731
    return call()


def in_generator():
    def gen():
        yield capture_here()
    return next(gen())


def in_list_comprehension():
    return [capture_here() for _ in range(1)][0]


def in_generator_expression():
    return list(capture_here() for _ in range(1))[0]


def in_class_body():
    class Body:
        result = capture_here()
    return Body.result


def recurse(depth, max_frames):
    if depth == 0:
        return capture_here(max_frames)
    return recurse(depth - 1, max_frames)


def in_coroutine():
    async def coroutine():
        return capture_here()
    return asyncio.run(coroutine()) if hasattr(asyncio, "run") else None


def in_exec_with_unicode_names():
    """Non-ASCII function names and filenames (UCS1, UCS2 and UCS4 strings)."""
    namespace = {"capture_here": capture_here}
    ucs1 = "def f\u00fcnction():\n    return capture_here()\n"
    exec(compile(ucs1, "caf\u00e9.py", "exec"), namespace)
    ucs2 = ("def \u51fd\u6570():\n"
            "    return f\u00fcnction()\n")
    exec(compile(ucs2, "\u30d5\u30a1\u30a4\u30eb_\U0001F600.py", "exec"),
         namespace)
    return namespace["\u51fd\u6570"]()


def in_thread(target, *args):
    results = []

    def run():
        results.append(target(*args))
    worker = threading.Thread(target=run, name="probe-thread")
    worker.start()
    worker.join()
    return results[0]


def check_supported():
    why = ctypes.create_string_buffer(512)
    if not PROBE.dc_probe_init(why, len(why)):
        print("dc_probe_init failed: %s" % why.value.decode())
        return 1
    version = why.value.decode()
    want_version = "%d.%d.%d" % sys.version_info[:3]
    print("frame reader: CPython %s" % version)
    if version != want_version:
        FAILURES.append("version %s, interpreter is %s" % (version,
                                                            want_version))

    check("nested functions", nested_a())
    model = Model()
    check("method and closure", model.forward())
    check("staticmethod", Model.static())
    check("classmethod", Model.klass())
    check("lambda", in_lambda())
    check("generator", in_generator())
    check("list comprehension", in_list_comprehension())
    check("generator expression", in_generator_expression())
    check("class body", in_class_body())
    check("coroutine", in_coroutine())
    check("unicode names", in_exec_with_unicode_names())
    check("recursion 200, full", recurse(200, FULL_DEPTH))
    check("recursion 200, cap 64", recurse(200, 64), 64)
    check("recursion 200, cap 1", recurse(200, 1), 1)
    check("recursion 200, cap 0", recurse(200, 0), 0)
    check("second thread", in_thread(nested_a))
    check("second thread, method", in_thread(model.forward))
    check("second thread, recursion cap 10", in_thread(recurse, 50, 10), 10)

    native = PROBE.dc_probe_capture_on_native_thread()
    if native != 0:
        FAILURES.append("native thread captured %d frames, want 0" % native)
    else:
        print("ok   native thread (0 frames)")

    if FAILURES:
        print("\n%d failure(s):\n%s" % (len(FAILURES), "\n".join(FAILURES)))
        return 1
    return 0


def check_unsupported():
    why = ctypes.create_string_buffer(512)
    ok = PROBE.dc_probe_init(why, len(why))
    reason = why.value.decode()
    count = PROBE.dc_probe_capture(BUFFER, BUFFER_LENGTH, 64)
    print("dc_probe_init -> %d (%s); capture -> %d" % (ok, reason, count))
    if ok or "not supported" not in reason or count != 0:
        print("expected a clean 'not supported' and no frames")
        return 1
    return 0


def benchmark():
    why = ctypes.create_string_buffer(512)
    if not PROBE.dc_probe_init(why, len(why)):
        print("dc_probe_init failed: %s" % why.value.decode())
        return 1

    def at_depth(depth):
        if depth > 1:
            return at_depth(depth - 1)
        frames = ctypes.c_int()
        capture_ns = PROBE.dc_probe_time_capture(1000000, 256,
                                                 ctypes.byref(frames))
        resolve_ns = PROBE.dc_probe_time_resolve(10000, 256)
        return frames.value, capture_ns, resolve_ns
    base = len(traceback.extract_stack())
    frames, capture_ns, resolve_ns = at_depth(30 - base)
    print("CPython %s: %d frames, capture %.1f ns (%.2f ns/frame), "
          "resolve %.1f ns/frame" % (why.value.decode(), frames, capture_ns,
                                     capture_ns / frames, resolve_ns))
    return 0


def main():
    global PROBE
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    PROBE = load_probe(sys.argv[1])
    if "--expect-unsupported" in sys.argv[2:]:
        return check_unsupported()
    if "--benchmark" in sys.argv[2:]:
        return benchmark()
    return check_supported()


if __name__ == "__main__":
    sys.exit(main())
