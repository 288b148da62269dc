"""Programs that fail, exit early, use threads, worker processes, stdin, -m,
or are killed by SIGTERM still leave valid profiles and unchanged behaviour."""

import os
import signal
import subprocess
import time
import pytest

from conftest import (CLI, PYTHON, PROGRAMS, cli, load_profile, program, run_plain, run_profiled,
                      run_with_package)
from markers import marker_line


def _has_op(tree, name):
    return bool(tree.find(kind="operator", name=name))


def test_unhandled_exception(tmp_path):
    out = tmp_path / "raise.dctx"
    result = run_profiled([PYTHON, program("fails.py"), "raise"], out)
    assert result.returncode == 1
    assert b"ValueError: planned failure" in result.stderr
    assert b"before failure" in result.stdout
    assert _has_op(load_profile(out), "aten::mm")


def test_sys_exit(tmp_path):
    out = tmp_path / "exit.dctx"
    assert run_profiled([PYTHON, program("fails.py"), "sys_exit"], out).returncode == 7
    assert _has_op(load_profile(out), "aten::mm")


def test_os_exit(tmp_path):
    out = tmp_path / "osexit.dctx"
    assert run_profiled([PYTHON, program("fails.py"), "os_exit"], out).returncode == 5
    assert _has_op(load_profile(out), "aten::mm")


def test_stdin_and_arguments_pass_through(tmp_path):
    data = b"hello\nworld\n"
    args = [PYTHON, program("echo_stdin.py"), "--flag", "a b"]
    plain = run_plain(args, input=data)
    profiled = run_profiled(args, tmp_path / "echo.dctx", input=data)
    assert profiled.returncode == plain.returncode == 0
    assert profiled.stdout == plain.stdout == b"HELLO\nWORLD\n"
    assert b"args=['--flag', 'a b']" in profiled.stderr


def test_python_dash_m(tmp_path):
    out = tmp_path / "pkg.dctx"
    env = {"PYTHONPATH": PROGRAMS}
    result = run_profiled([PYTHON, "-m", "pkg_main", "x", "y"], out, env=env, check=0)
    assert result.stdout.startswith(b"pkg_main ['x', 'y'] 3.0")
    assert _has_op(load_profile(out), "aten::sum")


def test_threads_have_their_own_roots(tmp_path):
    out = tmp_path / "threads.dctx"
    run_profiled([PYTHON, program("threads.py")], out, check=0)
    tree = load_profile(out)
    tanh = tree.find(kind="operator", name="aten::tanh")
    assert sum(n.calls() for n in tanh) == 40
    line = marker_line(program("threads.py"), "WORKER_OP_LINE")
    roots = set()
    for node in tanh:
        assert any(a.kind == "python" and a.line == line for a in node.ancestors()), repr(node)
        roots.add(node.path()[1].id)
    assert len(roots) == 2  # one per worker thread
    assert all(tree.nodes[r].kind == "thread" for r in roots)


def test_dataloader_workers_each_write_a_profile(tmp_path):
    out = tmp_path / "loader.dctx"
    result = run_profiled([PYTHON, program("dataloader_workers.py")], out, check=0)
    assert b"total" in result.stdout
    workers = sorted(p for p in os.listdir(tmp_path) if p.startswith("loader.") and p != "loader.dctx")
    assert len(workers) == 2, os.listdir(tmp_path)
    line = marker_line(program("dataloader_workers.py"), "WORKER_OP_LINE")
    calls = 0
    for name in workers:
        pid = name.split(".")[1]
        assert pid.isdigit()
        tree = load_profile(tmp_path / name)
        assert tree.metadata["pid"] == pid
        for node in tree.find(kind="operator", name="aten::mul"):
            assert any(a.kind == "python" and a.line == line for a in node.ancestors())
            calls += node.calls()
    assert calls == 32
    # The parent ran no aten::mul itself: worker samples are not duplicated.
    assert not load_profile(out).find(kind="operator", name="aten::mul")


def test_rank_in_file_name(tmp_path):
    out = tmp_path / "ranked.dctx"
    run_profiled([PYTHON, program("fails.py"), "ok"], out, env={"RANK": "3"}, check=0)
    tree = load_profile(tmp_path / "ranked.rank3.dctx")
    assert tree.metadata["rank"] == "3"


def test_sigterm_leaves_a_valid_profile(tmp_path):
    out = tmp_path / "term.dctx"
    ready = tmp_path / "ready"
    process = subprocess.Popen([CLI, "run", "-o", str(out), "--", PYTHON,
                                program("sigterm_target.py"), str(ready)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while not ready.exists():
        assert time.time() < deadline and process.poll() is None, process.communicate()
        time.sleep(0.05)
    time.sleep(0.3)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGTERM
    tree = load_profile(out)
    line = marker_line(program("sigterm_target.py"), "LOOP_LINE")
    mm = tree.find(kind="operator", name="aten::mm")
    assert mm and sum(n.calls() for n in mm) >= 1
    assert any(a.line == line for n in mm for a in n.ancestors())


def test_missing_command_is_reported(tmp_path):
    result = cli("run", "-o", tmp_path / "x.dctx", "--", "/nonexistent/program", check=127)
    assert b"cannot run '/nonexistent/program'" in result.stderr


def test_unwritable_output_directory(tmp_path):
    result = cli("run", "-o", tmp_path / "missing" / "x.dctx", "--", PYTHON, "-c", "pass",
                 check=2)
    assert b"cannot write profiles to" in result.stderr


def test_ctrl_c_leaves_a_valid_profile(tmp_path):
    # Ctrl-C reaches the whole foreground process group: the program gets
    # KeyboardInterrupt, `deepcontext run` ignores the signal and then dies of
    # it like the program did.
    out = tmp_path / "int.dctx"
    ready = tmp_path / "ready"
    process = subprocess.Popen([CLI, "run", "-o", str(out), "--", PYTHON,
                                program("sigterm_target.py"), str(ready)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    deadline = time.time() + 120
    while not ready.exists():
        assert time.time() < deadline and process.poll() is None, process.communicate()
        time.sleep(0.05)
    time.sleep(0.3)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert b"KeyboardInterrupt" in stderr
    assert process.returncode == -signal.SIGINT
    mm = load_profile(out).find(kind="operator", name="aten::mm")
    assert mm and sum(n.calls() for n in mm) >= 1


_FINISH = """
import os, sys
os.environ["DEEPCONTEXT_OUTPUT"] = sys.argv[1]
os.environ["DEEPCONTEXT_ROOT_PID"] = str(os.getpid())
os.environ["DEEPCONTEXT_TRACE_FRACTION"] = "0.5"
from deepcontext import _launch, _runtime
_launch.main()
active = _runtime.is_active()
_launch.finish(end_profiling=sys.argv[2] == "normal exit")
print("active_before=%d active_after=%d written=%d"
      % (active, _runtime.is_active(), os.path.exists(sys.argv[1])))
"""


def test_normal_exit_ends_profiling_before_writing_the_profile(tmp_path):
    # Nothing of the profiler (trace windows switching CUPTI, GPU tracing)
    # may run on while the interpreter and the CUDA libraries tear down.
    out = tmp_path / "finish.dctx"
    result = run_with_package([PYTHON, "-c", _FINISH, out, "normal exit"])
    assert result.returncode == 0, result.stderr.decode()
    assert b"active_before=1 active_after=0 written=1" in result.stdout, result.stdout
    assert "trace_windows" in load_profile(out).metadata


def test_sigterm_and_os_exit_only_write(tmp_path):
    # The process ends before anything tears down; a wait for the GPU could
    # hang on a collective that a lost peer never completes.
    out = tmp_path / "finish.dctx"
    result = run_with_package([PYTHON, "-c", _FINISH, out, "signal"])
    assert result.returncode == 0, result.stderr.decode()
    assert b"active_before=1 active_after=1 written=1" in result.stdout, result.stdout


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_pool_workers_terminated_while_exiting_keep_their_profiles(tmp_path, context):
    # The pool's exit sends SIGTERM to workers that may already be writing
    # their profiles at exit; each profile must still be complete. A SIGTERM
    # that reaches a worker just before it blocks on the task queue's lock
    # must still end it (the runtime's signal guard): without the guard one
    # run in about twelve hung, waiting for that worker, hence the repeats
    # and the short timeout.
    for attempt in range(12 if context == "fork" else 3):
        out = tmp_path / ("pool%d.dctx" % attempt)
        result = run_profiled([PYTHON, program("pool_workers.py"), context, "4"], out, check=0,
                              timeout=60)
        stderr = result.stderr.decode()
        assert "lost" not in stderr and "without writing" not in stderr, stderr
        written = stderr.split("wrote ")[1].split(":", 1)[1].split()
        assert len(written) >= 5, stderr  # spawn adds its resource tracker
        for path in written:
            load_profile(path)
