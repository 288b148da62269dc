"""`deepcontext run` as a launcher: its command line, its output path, the
list of profiles it prints, and signals between it and the program."""

import os
import re
import signal
import subprocess
import time

import pytest

from conftest import CLI, PYTHON, load_profile, run_with_package


def _run(*args, cwd=None, env=None, timeout=120):
    environment = dict(os.environ)
    environment.update(env or {})
    return subprocess.run([CLI, "run"] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, cwd=cwd, env=environment)


def _written(stderr):
    match = re.search(rb"wrote (\d+) profiles?: (.*)", stderr)
    assert match, stderr.decode()
    return match.group(2).decode().split()


def test_arguments_after_the_program_pass_through_without_double_dash(tmp_path):
    result = _run("-o", tmp_path / "a.dctx", PYTHON, "-c",
                  "import sys; print(sys.argv[1:])", "a", "-b", "-o", "x", "--native")
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.strip() == b"['a', '-b', '-o', 'x', '--native']"
    result = _run("-o", tmp_path / "b.dctx", "--", PYTHON, "-c",
                  "import sys; print(sys.argv[1:])", "--", "-q")
    assert result.stdout.strip() == b"['--', '-q']", result.stderr.decode()


@pytest.mark.parametrize("args", [["--natve", PYTHON, "-c", "pass"],
                                  ["-o", "x.dctx", "--natve", PYTHON, "-c", "pass"]])
def test_unknown_run_option_is_a_usage_error(tmp_path, args):
    result = _run(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert b"unknown option '--natve'" in result.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("option", ["--trace-fraction", "--trace-window-ms"])
@pytest.mark.parametrize("value", ["nan", "-nan", "inf", "0", "1e9"])
def test_non_finite_or_out_of_range_trace_values_are_refused(tmp_path, option, value):
    result = _run(option, value, PYTHON, "-c", "pass", cwd=tmp_path)
    assert result.returncode != 0
    assert b"not in range" in result.stderr, result.stderr.decode()
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("value", ["abc", "5", "2000000", "10ms", "-100"])
def test_invalid_cpu_sample_interval_is_refused(tmp_path, value):
    result = _run(PYTHON, "-c", "pass", cwd=tmp_path,
                  env={"DEEPCONTEXT_CPU_SAMPLE_US": value})
    assert result.returncode == 2
    assert (b"DEEPCONTEXT_CPU_SAMPLE_US=%s is not a whole number" % value.encode()
            in result.stderr), result.stderr.decode()


def test_output_name_is_honoured_exactly(tmp_path):
    result = _run("-o", tmp_path / "notes.txt", PYTHON, "-c", "pass")
    assert result.returncode == 0, result.stderr.decode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert _written(result.stderr) == [str(tmp_path / "notes.txt")]
    load_profile(tmp_path / "notes.txt")


@pytest.mark.parametrize("target", ["/dev/null", "DIR"])
def test_non_regular_output_is_refused(tmp_path, target):
    target = str(tmp_path) if target == "DIR" else target
    result = _run("-o", target, PYTHON, "-c", "print('ran')")
    assert result.returncode == 2
    assert b"ran" not in result.stdout
    assert (b"is a directory" in result.stderr or b"not a regular file" in result.stderr)
    assert not os.path.exists(target + ".dctx")


def test_long_output_name_is_written_or_refused(tmp_path):
    accepted = tmp_path / ("a" * 225 + ".dctx")
    result = _run("-o", accepted, PYTHON, "-c", "import os\nif os.fork() == 0: os._exit(0)\n"
                  "os.wait()")
    assert result.returncode == 0, result.stderr.decode()
    assert len(_written(result.stderr)) == 2
    load_profile(accepted)
    result = _run("-o", tmp_path / ("b" * 250), PYTHON, "-c", "pass")
    assert result.returncode == 2
    assert b"file name is 250 bytes long" in result.stderr


def test_written_list_is_exact(tmp_path):
    # A file of an earlier run, just written, is not this run's.
    stale = tmp_path / "out.99999.dctx"
    stale.write_bytes(b"old")
    code = ("import os, time\n"
            "if os.fork() == 0:\n"
            "    time.sleep(1.0)\n"  # still writing after the root exited
            "    os._exit(0)\n")
    result = _run("-o", tmp_path / "out.dctx", PYTHON, "-c", code)
    assert result.returncode == 0, result.stderr.decode()
    written = _written(result.stderr)
    assert len(written) == 2 and str(stale) not in written, written
    assert written[0] == str(tmp_path / "out.dctx")
    assert all(os.path.exists(p) for p in written)


def test_a_process_that_lost_its_profile_is_named(tmp_path):
    code = ("import os, signal\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n"
            "os.waitpid(pid, 0)\n")
    result = _run("-o", tmp_path / "out.dctx", PYTHON, "-c", code)
    assert result.returncode == 0
    assert re.search(rb"process \d+ ended without writing its profile", result.stderr), \
        result.stderr.decode()
    assert len(_written(result.stderr)) == 1


def test_a_launched_process_that_crashed_is_named_with_its_signal(tmp_path):
    # The launcher waits for the process it started, so it knows the signal
    # that ended it, and dies of the same one.
    code = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"
    result = _run("-o", tmp_path / "out.dctx", PYTHON, "-c", code)
    assert result.returncode == -signal.SIGSEGV, result.stderr.decode()
    assert re.search(rb"process \d+ died of SIGSEGV \(signal 11, a crash\) before writing "
                     rb"its profile", result.stderr), result.stderr.decode()
    assert b"no profile was written" in result.stderr


def test_two_runs_cannot_write_the_same_output(tmp_path):
    ready = tmp_path / "ready"
    first = subprocess.Popen([CLI, "run", "-o", str(tmp_path / "same.dctx"), PYTHON, "-c",
                              "import sys, time; open(sys.argv[1], 'w').close(); time.sleep(30)",
                              str(ready)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 60
        while not ready.exists():
            assert time.time() < deadline and first.poll() is None
            time.sleep(0.05)
        second = _run("-o", tmp_path / "same.dctx", PYTHON, "-c", "print('ran')")
        assert second.returncode == 2
        assert b"another `deepcontext run` is writing" in second.stderr
        assert b"ran" not in second.stdout
    finally:
        first.terminate()
        first.communicate(timeout=60)


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / ("out.dctx.%d.0.tmp" % dead.pid)
    stale.write_bytes(b"partial")
    live = tmp_path / ("out.dctx.%d.0.tmp" % os.getpid())
    live.write_bytes(b"being written")
    other = tmp_path / ("unrelated.%d.0.tmp" % dead.pid)
    other.write_bytes(b"not ours")
    result = _run("-o", tmp_path / "out.dctx", PYTHON, "-c", "pass")
    assert result.returncode == 0, result.stderr.decode()
    assert not stale.exists()
    assert live.exists() and other.exists()


def _start_sleeper(tmp_path):
    pid_file = tmp_path / "child.pid"
    code = ("import os, sys, time\n"
            "open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\n"
            "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
            "time.sleep(60)\n")
    launcher = subprocess.Popen([CLI, "run", "-o", str(tmp_path / "s.dctx"), PYTHON, "-c", code,
                                 str(pid_file)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    deadline = time.time() + 60
    while not pid_file.exists():
        assert time.time() < deadline and launcher.poll() is None, launcher.communicate()
        time.sleep(0.05)
    return launcher, int(pid_file.read_text())


def _gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open("/proc/%d/stat" % pid) as stat:  # a zombie not yet reaped
        return stat.read().split(")")[-1].split()[0] == "Z"


def test_program_follows_a_killed_launcher(tmp_path):
    launcher, child = _start_sleeper(tmp_path)
    launcher.kill()
    launcher.communicate(timeout=30)
    deadline = time.time() + 20
    while not _gone(child):
        assert time.time() < deadline, "the program outlived its launcher"
        time.sleep(0.05)


def test_sigint_to_the_launcher_alone_reaches_the_program(tmp_path):
    launcher, _ = _start_sleeper(tmp_path)
    launcher.send_signal(signal.SIGINT)
    _, stderr = launcher.communicate(timeout=60)
    assert b"KeyboardInterrupt" in stderr, stderr.decode()
    assert launcher.returncode == -signal.SIGINT
    load_profile(tmp_path / "s.dctx")


def test_stale_temporaries_of_other_outputs_are_left_alone(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    others = [tmp_path / ("outer.dctx.%d.0.tmp" % dead.pid),
              tmp_path / ("out-2.dctx.%d.0.tmp" % dead.pid)]
    for other in others:
        other.write_bytes(b"another output's")
    child = tmp_path / ("out.123.dctx.%d.0.tmp" % dead.pid)
    child.write_bytes(b"a worker's")
    result = _run("-o", tmp_path / "out.dctx", PYTHON, "-c", "pass")
    assert result.returncode == 0, result.stderr.decode()
    assert all(other.exists() for other in others)
    assert not child.exists()


def test_profile_region_with_a_long_name_is_written(tmp_path):
    # Its temporary "<name>.<pid>.<n>.tmp" would exceed 255 bytes.
    path = tmp_path / ("r" * 250)
    code = ("import sys, deepcontext\n"
            "with deepcontext.profile(sys.argv[1]):\n"
            "    sum(range(1000))\n")
    result = run_with_package([PYTHON, "-c", code, path])
    assert result.returncode == 0, result.stderr.decode()
    load_profile(path)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_ctrl_c_at_a_terminal_interrupts_the_program_once(tmp_path):
    # Ctrl-C reaches the whole foreground group (launcher and program); the
    # launcher must not forward it a second time.
    import fcntl
    import pty
    import termios
    master, slave = pty.openpty()
    pid_file = tmp_path / "child.pid"
    code = ("import os, sys, time\n"
            "open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\n"
            "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
            "try:\n"
            "    time.sleep(60)\n"
            "except KeyboardInterrupt:\n"
            "    sys.stderr.write('interrupted\\n')\n"
            "    time.sleep(1)\n"  # a second SIGINT would land here
            "    raise\n")

    def take_terminal():
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    launcher = subprocess.Popen([CLI, "run", "-o", str(tmp_path / "t.dctx"), PYTHON, "-c", code,
                                 str(pid_file)], stdin=slave, stdout=slave, stderr=subprocess.PIPE,
                                start_new_session=True, preexec_fn=take_terminal)
    os.close(slave)
    try:
        deadline = time.time() + 60
        while not pid_file.exists():
            assert time.time() < deadline and launcher.poll() is None, launcher.communicate()
            time.sleep(0.05)
        time.sleep(0.2)
        os.write(master, b"\x03")
        _, stderr = launcher.communicate(timeout=60)
    finally:
        os.close(master)
    assert stderr.count(b"interrupted") == 1, stderr.decode()
    assert stderr.count(b"KeyboardInterrupt") == 1, stderr.decode()
    assert launcher.returncode == -signal.SIGINT
    load_profile(tmp_path / "t.dctx")
