"""Trace windows: ops are traced in windows covering a share of the run, and
the profile says which share."""

import os

from conftest import PYTHON, cli, load_profile, program, run_profiled, run_with_package
from markers import marker_line

LOOP = program("trace_windows_loop.py")


def _products(result):
    return int(result.stdout.decode().split("products=")[1].split()[0])


def _mm_calls(tree):
    line = marker_line(LOOP, "PRODUCT_LINE")
    return sum(n.calls() for n in tree.nodes if n.name == "aten::mm"
               and any(a.kind == "python" and a.line == line for a in n.ancestors()))


def _traced_share(tree):
    return int(tree.metadata["traced_ns"]) / int(tree.metadata["duration_ns"])


def test_run_traces_about_the_asked_fraction_of_the_ops(tmp_path):
    out = tmp_path / "windows.dctx"
    result = run_profiled([PYTHON, LOOP], out, check=0,
                          options=["--trace-fraction", "0.2", "--trace-window-ms", "10"])
    products = _products(result)
    tree = load_profile(out)
    meta = tree.metadata
    assert meta["trace_fraction"] == "0.2"
    assert meta["trace_window_ns"] == "10000000"
    assert int(meta["trace_window_count"]) >= 10, meta
    # The share of ops traced follows the share of time in windows (the
    # program spends nearly all its time in the loop).
    share = _traced_share(tree)
    assert 0.05 < share < 0.5, meta
    calls = _mm_calls(tree)
    assert 0 < calls < 0.6 * products, (calls, products)
    report = cli("report", str(out)).stdout.decode()
    assert "Traced:" in report and "the metrics cover these windows only" in report, report


def test_without_windows_every_op_is_traced(tmp_path):
    out = tmp_path / "all.dctx"
    result = run_profiled([PYTHON, LOOP], out, check=0)
    tree = load_profile(out)
    assert "trace_windows" not in tree.metadata
    assert _mm_calls(tree) == _products(result)
    assert "Traced:" not in cli("report", str(out)).stdout.decode()


def test_profile_region_takes_a_fraction(tmp_path):
    out = tmp_path / "region.dctx"
    result = run_with_package([PYTHON, LOOP, "region", out])
    assert result.returncode == 0, result.stderr.decode()
    tree = load_profile(out)
    assert tree.metadata["trace_fraction"] == "0.3"
    assert 0.05 < _traced_share(tree) < 0.7, tree.metadata
    assert 0 < _mm_calls(tree) < 0.8 * _products(result)


def test_bad_values_are_refused_with_the_allowed_range(tmp_path):
    for option, value in (("--trace-fraction", "0"), ("--trace-fraction", "1.5"),
                          ("--trace-window-ms", "0.5"), ("--trace-fraction", "x")):
        result = run_profiled([PYTHON, "-c", "pass"], tmp_path / "bad.dctx",
                              options=[option, value])
        assert result.returncode != 0
        assert option in result.stderr.decode(), result.stderr.decode()
    # A refused region changes nothing: the next one has neither windows nor
    # the native frames the refused one asked for.
    ok = tmp_path / "ok.dctx"
    result = run_with_package([PYTHON, "-c",
                               "import sys, torch, deepcontext\n"
                               "try:\n"
                               "    with deepcontext.profile('x.dctx', native=True, trace_fraction=2):\n"
                               "        pass\n"
                               "except ValueError as error:\n"
                               "    print(error)\n"
                               "with deepcontext.profile(sys.argv[1]):\n"
                               "    torch.mm(torch.randn(4, 4), torch.randn(4, 4))\n", ok])
    assert result.returncode == 0, result.stderr.decode()
    assert b"traced fraction must be between 0.001 and 1 (got 2)" in result.stdout
    metadata = load_profile(ok).metadata
    assert "trace_windows" not in metadata
    assert "native" not in metadata["dlmonitor"], metadata["dlmonitor"]


def test_is_tracing_says_whether_a_window_is_open(tmp_path):
    result = run_with_package([PYTHON, "-c",
                               "import sys, time, deepcontext\n"
                               "print(deepcontext.is_tracing())\n"
                               "with deepcontext.profile(sys.argv[1], trace_fraction=0.3,\n"
                               "                         trace_window_ms=10):\n"
                               "    seen = set()\n"
                               "    deadline = time.monotonic() + 1.0\n"
                               "    while time.monotonic() < deadline:\n"
                               "        seen.add(deepcontext.is_tracing())\n"
                               "        time.sleep(0.0005)\n"
                               "print(sorted(seen))\n"
                               "with deepcontext.profile(sys.argv[2]):\n"
                               "    print(deepcontext.is_tracing())\n"
                               "print(deepcontext.is_tracing())\n",
                               tmp_path / "windows.dctx", tmp_path / "whole.dctx"])
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().split("\n")[:4] == ["False", "[False, True]", "True", "False"], \
        result.stdout


def test_forked_workers_trace_everything_even_when_forked_between_windows(tmp_path):
    # 0.1 % in 1 ms windows: the parent is between windows nearly all the
    # time, and torch's op callback is off there when the workers fork.
    out = tmp_path / "loader.dctx"
    loader = program("dataloader_workers.py")
    result = run_profiled([PYTHON, loader], out, check=0,
                          options=["--trace-fraction", "0.001", "--trace-window-ms", "1"])
    assert b"total" in result.stdout
    workers = sorted(p for p in os.listdir(tmp_path) if p.startswith("loader.") and p != "loader.dctx")
    assert len(workers) == 2, os.listdir(tmp_path)
    calls = 0
    for name in workers:
        tree = load_profile(tmp_path / name)
        assert "trace_windows" not in tree.metadata, tree.metadata
        calls += sum(n.calls() for n in tree.find(kind="operator", name="aten::mul"))
    assert calls == 32
    assert "trace_windows" in load_profile(out).metadata
