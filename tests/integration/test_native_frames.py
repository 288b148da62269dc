"""`deepcontext run --native` and profile(native=True): native frames between
the Python line and the op, spliced with the Python frames.

The test extension (native_ext/native_chain.cc) runs a() -> b() -> c(); c()
calls back into Python, which runs torch.relu. The program calls the
extension inside record_function("native_chain"), so the op path must read:
scope native_chain > main (CHAIN_LINE) > [ctypes/libffi] > native_chain_run >
a > b > c > [libffi/ctypes] > on_c (RELU_LINE) > [torch binding/dispatcher]
> aten::relu, with no CPython interpreter frames in between.
"""

import os
import subprocess

import pytest

from conftest import BUILD, PYTHON, load_profile, run_profiled, run_with_package
from markers import marker_line

HERE = os.path.dirname(os.path.abspath(__file__))
EXT_DIR = os.path.join(HERE, "native_ext")
SOURCE = os.path.join(EXT_DIR, "native_chain.cc")
PROGRAM = os.path.join(EXT_DIR, "native_chain_program.py")
BUILT = os.path.join(BUILD, "tests", "integration", "native_ext",
                     "libdc_test_native_chain.so")
CHAIN = ["native_chain::a(", "native_chain::b(", "native_chain::c("]
CALL_MARKERS = ["A_CALL_LINE", "B_CALL_LINE", "C_CALL_LINE"]
EXTENSION_PATH = []  # set by the fixture


@pytest.fixture(scope="module")
def extension(tmp_path_factory):
    """The test extension: CMake's build, else compiled here (same flags)."""
    out = BUILT
    if not os.path.exists(out):
        out = str(tmp_path_factory.mktemp("native_ext") / "libdc_test_native_chain.so")
        subprocess.run([os.environ.get("CXX", "c++"), "-shared", "-fPIC", "-O1", "-g",
                        "-fno-inline", "-fno-optimize-sibling-calls",
                        "-fno-omit-frame-pointer", SOURCE, "-o", out], check=True)
    EXTENSION_PATH[:] = [out]
    return out


def _source_line(marker):
    """Line of a `// MARKER` comment in the extension's source."""
    with open(SOURCE) as f:
        for number, line in enumerate(f, start=1):
            if "// " + marker in line:
                return number
    raise AssertionError("marker %s not in %s" % (marker, SOURCE))


def _relu_paths(tree):
    relu = tree.find(kind="operator", name="aten::relu")
    assert relu, "no aten::relu in the profile"
    return relu


def _check_native_path(tree, extension):
    assert "native: " in tree.metadata.get("dlmonitor", ""), tree.metadata
    chain_line = marker_line(PROGRAM, "CHAIN_LINE")
    relu_line = marker_line(PROGRAM, "RELU_LINE")
    relu = _relu_paths(tree)
    # The same path three times: one node (the path was built once).
    assert len(relu) == 1, relu
    assert relu[0].calls() == 3
    path = relu[0].path()
    labels = [(n.kind, n.name) for n in path]
    # No frame of the interpreter itself.
    assert not [n for n in path if n.kind == "native" and
                n.name.startswith(("_PyEval", "PyEval", "_PyObject", "PyObject"))], labels

    def index(predicate):
        found = [i for i, n in enumerate(path) if predicate(n)]
        assert len(found) == 1, labels
        return found[0]

    scope = index(lambda n: n.kind == "scope" and n.name == "native_chain")
    caller = index(lambda n: n.kind == "python" and n.line == chain_line and
                   path.index(n) > scope)
    chain = [index(lambda n, p=prefix: n.kind == "native" and n.name.startswith(p))
             for prefix in CHAIN]
    callback = index(lambda n: n.kind == "python" and n.name == "on_c" and n.line == relu_line)
    op = path.index(relu[0])
    # scope > caller line > a > b > c (adjacent) > callback line > op
    assert scope < caller < chain[0], labels
    assert chain == [chain[0], chain[0] + 1, chain[0] + 2], labels
    assert chain[2] < callback < op, labels
    # Everything between the caller line and a() is native (ctypes, libffi).
    assert all(n.kind == "native" for n in path[caller + 1:chain[0]]), labels
    # file:line where debug info is read, else the module.
    for i, marker in zip(chain, CALL_MARKERS):
        node = path[i]
        if node.file.endswith(".cc"):
            assert node.file.endswith("native_chain.cc") and \
                node.line == _source_line(marker), (node.file, node.line)
        else:
            assert node.file == os.path.realpath(extension) or \
                node.file == extension, node.file
            assert node.line == 0


def _run(tmp_path, name, *options, env=None):
    out = tmp_path / name
    result = run_profiled([PYTHON, PROGRAM, EXTENSION_PATH[0]], out, options=options, check=0,
                          env=env)
    assert b"native chain done" in result.stdout
    return load_profile(out)


def test_run_native_splices_python_and_native_frames(tmp_path, extension):
    _check_native_path(_run(tmp_path, "native.dctx", "--native"), extension)


def _libunwind_installed():
    import ctypes
    try:
        ctypes.CDLL("libunwind.so.8")
        return True
    except OSError:
        return False


@pytest.mark.parametrize("unwinder", ["cfi-cache", "libunwind"])
def test_each_unwinder_builds_the_same_path(tmp_path, extension, unwinder):
    """Cached .eh_frame rules (cfi-cache, the default on x86-64 and
    aarch64) and libunwind (the default elsewhere, when installed) must give
    the path libgcc gives (glibc backtrace(), the unwinder of last resort)."""
    if unwinder == "libunwind" and not _libunwind_installed():
        pytest.skip("libunwind.so.8 is not installed")
    tree = _run(tmp_path, unwinder + ".dctx", "--native", env={"DEEPCONTEXT_UNWINDER": unwinder})
    assert "native: " + unwinder in tree.metadata.get("dlmonitor", ""), tree.metadata
    if unwinder == "cfi-cache":
        # Every frame of this program has a rule it models: no capture
        # needed libgcc.
        assert tree.metadata.get("native_unwind", "").endswith(
            " 0 captures unwound by libgcc"), tree.metadata
    _check_native_path(tree, extension)
    reference = _run(tmp_path, "reference.dctx", "--native",
                     env={"DEEPCONTEXT_UNWINDER": "glibc-backtrace"})
    assert "native: glibc-backtrace" in reference.metadata.get("dlmonitor", ""), \
        reference.metadata
    labels = [(n.kind, n.name, n.file, n.line) for n in _relu_paths(tree)[0].path()]
    expected = [(n.kind, n.name, n.file, n.line) for n in _relu_paths(reference)[0].path()]
    assert labels == expected


@pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64"),
                    reason="cached .eh_frame rules are modelled for x86-64 and aarch64")
def test_the_default_unwinder_is_cfi_cache(tmp_path, extension):
    """Without DEEPCONTEXT_UNWINDER, --native unwinds with cached rules
    even where libunwind is installed: only they stop where the stack meets
    the previous capture's frames."""
    tree = _run(tmp_path, "default.dctx", "--native")
    assert "native: cfi-cache" in tree.metadata.get("dlmonitor", ""), tree.metadata


def test_without_native_there_are_no_native_frames(tmp_path, extension):
    tree = _run(tmp_path, "plain.dctx")
    assert not tree.find(kind="native")
    assert "native: " not in tree.metadata.get("dlmonitor", "")
    # The callback's line hangs right under the line that called the
    # extension.
    for node in _relu_paths(tree):
        callback = node.parent.parent
        assert node.parent.kind == "phase", node
        assert callback.name == "on_c", node
        assert callback.parent.line == marker_line(PROGRAM, "CHAIN_LINE"), node


def test_profile_api_native(tmp_path, extension):
    out = tmp_path / "api.dctx"
    result = run_with_package([PYTHON, PROGRAM, extension, out])
    assert result.returncode == 0, result.stderr.decode()
    _check_native_path(load_profile(out), extension)


def test_native_capture_stats_say_where_the_time_goes(tmp_path, extension):
    """DEEPCONTEXT_NATIVE_STATS=1 reports, per capture site, how many
    captures there were, how many frames were walked and copied, and how
    many found their path cached; without it there is no such report."""
    import re
    tree = _run(tmp_path, "stats.dctx", "--native",
                env={"DEEPCONTEXT_UNWINDER": "cfi-cache", "DEEPCONTEXT_NATIVE_STATS": "1"})
    _check_native_path(tree, extension)
    stats = tree.metadata.get("native_capture_stats", "")
    calls = re.match(r"op_enter: (\d+) calls, [\d.]+ ms \(\d+ ns each\); ", stats)
    assert calls, stats
    # Captures keep return addresses; frames are named when the profile is
    # written, after these statistics were taken, so none was named yet
    # (_check_native_path found them named in the profile).
    assert "frame_name:" not in stats, stats
    match = re.search(r"op_entry: (\d+) captures on (\d+) threads \((\d+) anchored, (\d+) on the "
                     r"previous capture\), frames walked ([\d.]+) "
                     r"\(max (\d+)\) copied ([\d.]+) per capture, (\d+) new stacks; "
                     r"unwind [\d.]+ ms \(\d+ ns each\), total [\d.]+ ms \(\d+ ns each\); "
                     r"reused (\d+), cached (\d+), new (\d+) \([\d.]+ ms\), no stack (\d+), "
                      r"by time \(<0.25/1/4/16/64/256/more us\) ([\d/]+)", stats)
    assert match, stats
    buckets = [int(count) for count in match.group(13).split("/")]
    (captures, threads, anchored, on_previous, walked, max_walked, _, stacks, reused, cached, new,
     no_stack) = (float(value) for value in match.groups()[:12])
    # An op entry's one anchor is the thread's previous entry capture.
    assert on_previous == anchored, stats
    assert threads == 1, stats  # the program's ops all run on its main thread
    assert len(buckets) == 7 and sum(buckets) == captures, stats
    # Every op entered is timed; only those entered from Python capture.
    assert int(calls.group(1)) >= captures, stats
    # Every return address's rule was kept: none was computed twice for
    # want of a slot, and the thread's cache missed at most once per rule
    # and capture site it evicted.
    cfi = re.search(r"; cfi-cache: (\d+) rules, (\d+) thread-cache misses, "
                    r"(\d+) rules computed uncached, ([\d.]+) ms computing rules "
                    r"\((\d+) minor, (\d+) major page faults\)$", stats)
    assert cfi, stats
    # The first FDE searches read parts of libtorch's .eh_frame_hdr (1.7 MB
    # on Debian's torch) that nothing had read before.
    assert int(cfi.group(5)) + int(cfi.group(6)) > 0, stats
    assert int(cfi.group(1)) > 0 and int(cfi.group(2)) >= int(cfi.group(1)), stats
    assert cfi.group(3) == "0", stats
    # aten::relu three times from one path: built once, then found.
    assert captures >= 3 and cached >= 2 and new >= 1, stats
    assert reused + cached + new + no_stack == captures, stats
    assert 1 <= stacks <= captures and anchored <= captures, stats
    assert 0 < walked <= max_walked, stats
    # Which libraries the walks went through: file names, per capture,
    # adding up to the frames walked.
    modules = re.search(r"by time \(<0.25/1/4/16/64/256/more us\) [\d/]+, frames walked by "
                        r"module: ([^;]+)", stats)
    assert modules, stats
    by_module = {name: float(frames) for name, frames in
                 (part.rsplit(" ", 1) for part in modules.group(1).split(", "))}
    assert all(name and (name.startswith("/proc/") or "/" not in name) and frames > 0
               for name, frames in by_module.items()), stats
    assert "libtorch_cpu" in " ".join(by_module), stats
    assert abs(sum(by_module.values()) - walked) <= 0.01 * len(by_module) + 0.05, stats
    plain = _run(tmp_path, "no_stats.dctx", "--native", env={"DEEPCONTEXT_UNWINDER": "cfi-cache"})
    assert "native_capture_stats" not in plain.metadata
