"""Running one benchmark workload process and reading what it printed:
shared by bench/gpu_overhead.py and its --table (overhead_table.py)."""

import os
import signal
import subprocess
import tempfile
import threading


def run(command, env=None):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if result.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(command), result.stderr.decode()[-3000:]))
    return result.stdout.decode()


def step_ms(output):
    for token in output.split():
        if token.startswith("step_ms="):
            return float(token.split("=", 1)[1])
    raise RuntimeError("no step time in %r" % output)


class CellTimeout(RuntimeError):
    """A cell's process ran past --cell-timeout and was killed."""


def measure(command, env=None, timeout=None):
    """Runs one workload process; returns (median step ms, mean step ms,
    peak RSS MiB of the process and its children, stdout) or raises
    (CellTimeout when it ran past `timeout` seconds: its process group is
    killed, so one hung cell cannot eat the whole table)."""
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env,
                                   start_new_session=True)
        expired = []

        def kill():
            expired.append(True)
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        timer = threading.Timer(timeout, kill) if timeout else None
        if timer is not None:
            timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            if timer is not None:
                timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        if expired:
            raise CellTimeout("%s: killed after %g s (--cell-timeout)" % (
                os.path.basename(command[0]), timeout))
        if process.returncode != 0:
            err.seek(0)
            raise RuntimeError("%s failed:\n%s" % (" ".join(command), err.read().decode()[-2000:]))
        out.seek(0)
        output = out.read().decode()
    values = dict(token.split("=", 1) for token in output.split() if "=" in token)
    # ru_maxrss is in KiB on Linux, and covers waited-for descendants too.
    return (float(values["step_ms"]), float(values["step_mean_ms"]), usage.ru_maxrss / 1024.0,
            output)
