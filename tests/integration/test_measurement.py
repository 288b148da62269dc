"""What the profile measures matches what the program measures itself."""

import os

import pytest

from conftest import NVIDIA_DRIVER, PYTHON, cli, load_profile, program, run_profiled, run_with_package
from markers import marker_line


def _profile_cpu_accounting(tmp_path, options=(), env=None):
    """Runs cpu_accounting.py under the profiler, with `env` added to the
    environment: (profile path, tree, the program's own measurement of its
    ops' CPU time in ns, the mm and tanh op nodes, the run's
    CompletedProcess). The program runs until it has enough op time to
    measure, so the op count comes from it too."""
    out = tmp_path / "cpu.dctx"
    measured_file = tmp_path / "measured"
    result = run_profiled([PYTHON, program("cpu_accounting.py"), str(measured_file)], out,
                          options=options, env=env, check=0)
    tree = load_profile(out)
    spent_ns, iterations = (int(v) for v in measured_file.read_text().split())
    ops = [n for n in tree.find(kind="operator") if n.name in ("aten::mm", "aten::tanh")]
    assert sum(n.calls() for n in ops) == 2 * iterations
    return out, tree, spent_ns, ops, result


def test_exact_op_cpu_time_matches_programs_own_measurement(tmp_path):
    _, tree, measured, ops, _ = _profile_cpu_accounting(tmp_path, ["--exact-cpu-time"])
    assert tree.metadata["op_cpu_time"] == "on"
    profiled = sum(n.incl("cpu_time") for n in ops)
    assert abs(profiled - measured) <= 0.10 * measured, (profiled, measured)


def test_record_function_scopes_are_nodes(tmp_path):
    out = tmp_path / "scopes.dctx"
    run_profiled([PYTHON, program("scopes.py")], out, check=0)
    tree = load_profile(out)
    scope = tree.find(kind="scope", name="my_scope")
    assert len(scope) == 1 and scope[0].calls() == 3
    line = marker_line(program("scopes.py"), "SCOPED_OP_LINE")
    relu = tree.find(kind="operator", name="aten::relu")
    assert relu and all(scope[0] in list(n.ancestors()) for n in relu)
    assert all(any(a.kind == "python" and a.line == line for a in n.ancestors()) for n in relu)
    inner = tree.find(kind="scope", name="inner_scope")
    assert inner and scope[0] in list(inner[0].ancestors())
    sigmoid = tree.find(kind="operator", name="aten::sigmoid")
    assert sigmoid and all(inner[0] in list(n.ancestors()) for n in sigmoid)
    # torch's own record_function glue is not shown between line and scope.
    assert not any(a.kind == "python" and "autograd/profiler" in a.file
                   for a in scope[0].ancestors())


def test_scopes_ending_on_other_threads_leave_open_scopes_alone(tmp_path):
    # A scope that ends on another thread must not close one still open
    # there, even when it took the address of a scope that thread started.
    out = tmp_path / "across.dctx"
    run_profiled([PYTHON, program("scopes_across_threads.py")], out, check=0)
    tree = load_profile(out)
    kept = tree.find(kind="scope", name="kept_scope")
    assert kept and sum(n.calls() for n in kept) == 40
    sigmoid = tree.find(kind="operator", name="aten::sigmoid")
    assert sum(n.calls() for n in sigmoid) == 40
    assert all(any(a.name == "kept_scope" for a in n.ancestors()) for n in sigmoid)


def test_scopes_ending_on_other_threads_are_closed_where_they_began(tmp_path):
    # Once another thread ends a scope, the thread that began it no longer
    # runs inside it: its later ops and scopes are not nested under it, and
    # the scope has its calls and wall time.
    out = tmp_path / "across.dctx"
    run_profiled([PYTHON, program("scopes_across_threads.py")], out, check=0)
    tree = load_profile(out)
    moved = ("moved_out", "moved_in", "ended_elsewhere")
    for name in moved:
        scopes = tree.find(kind="scope", name=name)
        assert sum(n.calls() for n in scopes) == (1 if name == "ended_elsewhere" else 40), name
        assert sum(n.excl("wall_time") for n in scopes) > 0, name
        # Each begins where the previous one was closed, not inside it.
        assert not any(a.name in moved for n in scopes for a in n.ancestors()), name
    tanh = tree.find(kind="operator", name="aten::tanh")
    assert sum(n.calls() for n in tanh) == 5
    assert not any(a.name in moved for n in tanh for a in n.ancestors())

    def scopes_above(node):
        return [a.name for a in node.ancestors() if a.name in moved + ("kept_scope",)]

    # The worker's sigmoid runs in kept_scope after moved_out ended, and
    # relu before, inside both; kept_scope began inside moved_out.
    sigmoid = tree.find(kind="operator", name="aten::sigmoid")
    assert sigmoid and all(scopes_above(n) == ["kept_scope", "moved_out"] for n in sigmoid)
    relu = tree.find(kind="operator", name="aten::relu")
    assert relu and all(scopes_above(n) == ["kept_scope", "moved_out"] for n in relu)


def test_gpu_status_is_recorded(tmp_path):
    # Every profile says whether GPU activity was recorded; on a machine
    # without an NVIDIA driver (CI) it says why not, and nothing fails.
    out = tmp_path / "status.dctx"
    run_profiled([PYTHON, program("fails.py"), "ok"], out, check=0)
    status = load_profile(out).metadata["gpu"]
    if not NVIDIA_DRIVER:
        assert status.startswith("no GPU activity recorded: "), status
    assert "\n" not in status


def test_no_cpu_time_keeps_calls_and_wall_time(tmp_path):
    out, tree, measured, ops, _ = _profile_cpu_accounting(tmp_path, ["--no-cpu-time"])
    assert tree.metadata["op_cpu_time"] == "off"
    assert all("cpu_time" not in n.exclusive for n in tree.nodes)
    # Wall time still covers the ops' own measurement (they never block).
    assert sum(n.incl("wall_time") for n in ops) >= 0.9 * measured
    report = cli("report", out).stdout.decode()
    assert "Metric:    wall_time" in report, report[:600]


@pytest.mark.parametrize("clock", ["counter", "monotonic"])
def test_ops_wall_time_from_either_clock_covers_their_own_measurement(tmp_path, clock):
    """DEEPCONTEXT_OP_CLOCK forces the CPU's counter or CLOCK_MONOTONIC
    for ops' wall times; the profile names the one used, and either covers
    the CPU time the ops measured themselves (they never block), without
    reading several times more (a wrong tick rate)."""
    counters = {"x86_64": "time-stamp counter", "aarch64": "virtual counter (CNTVCT_EL0)"}
    if clock == "counter" and os.uname().machine not in counters:
        pytest.skip("no counter is read on " + os.uname().machine)
    _, tree, measured, ops, _ = _profile_cpu_accounting(
        tmp_path, ["--no-cpu-time"], env={"DEEPCONTEXT_OP_CLOCK": clock})
    used = tree.metadata["op_wall_clock"]
    if clock == "counter":
        assert used.startswith(counters[os.uname().machine] + ", ") and \
            used.endswith(" ns per tick"), used
    else:
        assert used == "CLOCK_MONOTONIC", used
    wall = sum(n.incl("wall_time") for n in ops)
    assert 0.9 * measured <= wall <= 3 * measured, (wall, measured)


def test_profile_region_without_cpu_time(tmp_path):
    out = tmp_path / "region.dctx"
    code = ("import sys, torch, deepcontext\n"
            "x = torch.randn(16, 16)\n"
            "with deepcontext.profile(sys.argv[1], cpu_time=False):\n"
            "    torch.mm(x, x)\n"
            "with deepcontext.profile(sys.argv[1] + '.2'):\n"
            "    torch.mm(x, x)\n"
            "with deepcontext.profile(sys.argv[1] + '.3', cpu_time='exact'):\n"
            "    torch.mm(x, x)\n")
    result = run_with_package([PYTHON, "-c", code, out])
    assert result.returncode == 0, result.stderr.decode()
    first, second, third = (load_profile(str(out) + suffix) for suffix in ("", ".2", ".3"))
    assert first.metadata["op_cpu_time"] == "off"
    assert not any("cpu_time" in n.exclusive for n in first.nodes)
    # The next region is back to the default.
    assert second.metadata["op_cpu_time"].startswith("sampled every")
    assert third.metadata["op_cpu_time"] == "on"
    mm = third.find(kind="operator", name="aten::mm")
    assert mm and mm[0].exclusive["cpu_time"]["count"] == 1


@pytest.mark.parametrize("options", [[], ["--sampled-cpu-time"]], ids=["default", "flag"])
def test_sampled_cpu_time_matches_programs_own_measurement(tmp_path, options):
    _, tree, measured, ops, _ = _profile_cpu_accounting(tmp_path, options)
    assert tree.metadata["op_cpu_time"] == "sampled every 1000 us"
    # Statistical: each millisecond goes to the op running at its tick.
    profiled = sum(n.incl("cpu_time") for n in ops)
    assert abs(profiled - measured) <= 0.25 * measured, (profiled, measured)
    # CPU outside ops is charged to the thread's node.
    thread = [n for n in tree.nodes if n.kind == "thread"]
    assert thread and any("cpu_time" in n.exclusive for n in thread)


def test_sampling_interval_comes_from_the_environment(tmp_path):
    _, tree, measured, ops, _ = _profile_cpu_accounting(
        tmp_path, env={"DEEPCONTEXT_CPU_SAMPLE_US": "5000"})
    assert tree.metadata["op_cpu_time"] == "sampled every 5000 us"
    profiled = sum(n.incl("cpu_time") for n in ops)
    assert abs(profiled - measured) <= 0.25 * measured, (profiled, measured)


@pytest.mark.parametrize("value", ["abc", "5", "2000000", "10ms"])
def test_bad_sampling_interval_is_an_error(tmp_path, value):
    # A profile sampled at another interval than asked for would mislead:
    # `deepcontext run` refuses to start, deepcontext.profile() raises.
    result = run_profiled([PYTHON, "-c", "print('ran')"], tmp_path / "cpu.dctx",
                          env={"DEEPCONTEXT_CPU_SAMPLE_US": value})
    assert result.returncode == 2 and b"ran" not in result.stdout
    message = ("DEEPCONTEXT_CPU_SAMPLE_US=%s is not a whole number of microseconds" % value)
    assert message.encode() in result.stderr, result.stderr.decode()
    code = ("import os, deepcontext\n"
            "os.environ['DEEPCONTEXT_CPU_SAMPLE_US'] = %r\n"
            "try:\n"
            "    with deepcontext.profile(%r):\n"
            "        pass\n"
            "except ValueError as error:\n"
            "    print('ValueError:', error)\n" % (value, str(tmp_path / "region.dctx")))
    result = run_with_package([PYTHON, "-c", code])
    assert ("ValueError: " + message).encode() in result.stdout, result.stderr.decode()
    assert not (tmp_path / "region.dctx").exists()


def test_profile_region_cpu_time_modes(tmp_path):
    out = tmp_path / "sampled.dctx"
    code = ("import sys, torch, deepcontext\n"
            "x = torch.randn(256, 256)\n"
            "try:\n"
            "    with deepcontext.profile(sys.argv[1] + '.bad', cpu_time='precise'):\n"
            "        pass\n"
            "except ValueError as error:\n"
            "    print('refused:', error)\n"
            "with deepcontext.profile(sys.argv[1], cpu_time='sampled'):\n"
            "    for _ in range(200):\n"
            "        torch.mm(x, x)\n")
    result = run_with_package([PYTHON, "-c", code, out])
    assert result.returncode == 0, result.stderr.decode()
    assert b"refused: cpu_time must be 'sampled', 'exact' (or True) or 'off'" in result.stdout
    assert not os.path.exists(str(out) + ".bad")
    tree = load_profile(out)
    assert tree.metadata["op_cpu_time"].startswith("sampled")
    mm = tree.find(kind="operator", name="aten::mm")
    assert sum(n.calls() for n in mm) == 200
    assert sum(n.incl("cpu_time") for n in mm) > 0


def test_cpu_time_options_exclude_each_other(tmp_path):
    result = cli("run", "--exact-cpu-time", "--no-cpu-time", "-o", str(tmp_path / "x.dctx"),
                 "--", PYTHON, "-c", "pass", check=None)
    assert result.returncode != 0
    assert b"excludes" in result.stderr, result.stderr
    assert not (tmp_path / "x.dctx").exists()


def test_gpu_memory_tracking_can_be_turned_off(tmp_path):
    out = tmp_path / "nomem.dctx"
    run_profiled([PYTHON, program("cpu_accounting.py"), str(tmp_path / "measured")], out,
                 options=["--no-gpu-memory"], check=0)
    assert load_profile(out).metadata["gpu_memory"] == (
        "not tracked: turned off (--no-gpu-memory, DEEPCONTEXT_GPU_MEMORY=0)")
