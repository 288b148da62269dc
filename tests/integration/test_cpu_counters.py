"""`deepcontext run --cpu-counters`: hardware counters per op where the
machine has them, and a one-line warning in the profile and the report where
it does not (many VMs expose only software events)."""

from conftest import PYTHON, cli, load_profile, program, run_profiled


def _counters_probe():
    """What the kernel says to a cycles counter: None when it counts, else
    the errno name."""
    import ctypes
    import errno
    import os
    import struct
    libc = ctypes.CDLL(None, use_errno=True)
    # perf_event_attr: type 0 (hardware), size, config 0 (cycles); bit 5 of
    # the flags word is exclude_kernel.
    attr = bytearray(128)
    struct.pack_into("<IIQ", attr, 0, 0, 128, 0)
    struct.pack_into("<Q", attr, 40, (1 << 5) | (1 << 6))
    buffer = ctypes.create_string_buffer(bytes(attr), 128)
    fd = libc.syscall(298, buffer, 0, -1, -1, 0)  # SYS_perf_event_open, x86-64
    if fd >= 0:
        os.close(fd)
        return None
    return errno.errorcode.get(ctypes.get_errno(), "?")


def test_cpu_counters_count_per_op_or_warn_in_one_line(tmp_path):
    out = tmp_path / "counters.dctx"
    run_profiled([PYTHON, program("cpu_accounting.py"), str(tmp_path / "measured")], out,
                 options=["--cpu-counters"], check=0)
    tree = load_profile(out)
    ops = [n for n in tree.find(kind="operator") if n.name == "aten::mm"]
    assert ops
    refused = _counters_probe()
    if refused is None:
        assert tree.metadata["cpu_counters"].startswith("cycles, instructions")
        assert int(tree.metadata["cpu_counter_threads"]) >= 1
        assert sum(n.incl("cpu_cycles") for n in ops) > 0
        assert sum(n.incl("cpu_instructions") for n in ops) > 0
        return
    warning = tree.metadata["warning_cpu_counters"]
    assert warning.startswith("CPU counters unavailable: perf_event_open(cycles, ")
    assert "\n" not in warning
    assert tree.metadata["cpu_counters"] == "off"
    # CPU time is still sampled and charged.
    assert sum(n.incl("cpu_time") for n in ops) > 0
    report = cli("report", out).stdout.decode()
    assert any(line.startswith("Warning:") and line.endswith(warning)
               for line in report.splitlines()), report


def test_cpu_counters_need_sampled_cpu_time(tmp_path):
    result = cli("run", "--cpu-counters", "--exact-cpu-time", "-o", str(tmp_path / "x.dctx"),
                 "--", PYTHON, "-c", "pass", check=None)
    assert result.returncode != 0
    assert b"excludes" in result.stderr, result.stderr
