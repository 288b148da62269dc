"""gpu_models.py --thread-log (bench/workloads/thread_log.py) and its printer
bench/thread_steps.py: what ran beside each timed step."""

import json
import os
import sys
import threading
import time

import pytest

from bench_scripts import BENCH, WORKLOAD, bench_module
from conftest import PYTHON, run_with_package

WORKLOADS = os.path.dirname(WORKLOAD)


def thread_log_module():
    if WORKLOADS not in sys.path:
        sys.path.insert(0, WORKLOADS)
    import thread_log
    return thread_log


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_cpu_lists_read_as_sysfs_writes_them():
    parse = thread_log_module().parse_cpu_list
    assert parse("0-2,8\n") == [0, 1, 2, 8]
    assert parse("5") == [5]
    assert parse("") == []


def test_a_step_keeps_the_stepping_thread_and_the_threads_that_ran_beside_it(tmp_path):
    thread_log = thread_log_module()
    log = thread_log.ThreadLog()
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            spin(0.001)

    helper = threading.Thread(target=busy, name="busy-helper")
    helper.start()
    try:
        log.step_started()
        start = time.perf_counter()
        spin(0.05)
        log.step_ended(1000 * (time.perf_counter() - start))
        log.step_started()
        log.step_ended(0.0)
    finally:
        stop.set()
        helper.join()
    path = tmp_path / "threads.json"
    log.write(str(path))
    data = json.loads(path.read_text())
    assert data["stepping_tid"] == threading.get_native_id()
    assert data["siblings"], "no CPU topology read"
    first = data["steps"][0]
    me = first["threads"][str(data["stepping_tid"])]
    assert first["ms"] >= 50
    # Its own clock: the spin's time on a CPU, give or take the waits.
    assert 0 < me["run_ms"] <= first["ms"] + 5
    assert me["wait_ms"] >= 0 and me["involuntary"] >= 0
    assert {"cpu", "cpu_before"} <= set(me)
    other = first["threads"][str(helper.native_id)]
    assert other["run_ms"] + other["wait_ms"] > 0
    # A thread idle all step is left out; the stepping thread never is.
    assert str(data["stepping_tid"]) in data["steps"][1]["threads"]


def test_a_thread_log_refuses_a_system_without_the_counters(tmp_path):
    with pytest.raises(RuntimeError, match="cannot read this thread's counters"):
        thread_log_module().ThreadLog(task_root=str(tmp_path))


def synthetic_log(path):
    """Four steps on CPU 0 (core siblings 0 and 1): the slow ones had a
    profiler thread on CPU 1 beside them, the others had it on CPU 2."""
    def step(ms, ran, waited, other_cpu, moved=False):
        return {"ms": ms, "threads": {
            "10": {"name": "python3", "cpu": 0, "cpu_before": 3 if moved else 0,
                   "run_ms": ran, "wait_ms": waited, "involuntary": 2 if waited else 0},
            "11": {"name": "dc-gpu-records", "cpu": other_cpu, "cpu_before": other_cpu,
                   "run_ms": 30.0, "wait_ms": 0.0, "involuntary": 0}}}
    path.write_text(json.dumps({
        "stepping_tid": 10,
        "siblings": {"0": [0, 1], "1": [0, 1], "2": [2, 3], "3": [2, 3]},
        "steps": [step(60.0, 59.0, 0.0, 2), step(61.0, 60.0, 0.0, 2),
                  step(90.0, 88.0, 1.0, 1), step(88.0, 70.0, 17.0, 1, moved=True)]}))


def test_thread_steps_splits_slow_steps_and_says_what_ran_beside_them(tmp_path):
    path = tmp_path / "threads.json"
    synthetic_log(path)
    printer = bench_module("thread_steps")
    log = printer.load(str(path))
    facts = [printer.step_facts(log, step) for step in log["steps"]]
    assert [f["beside_ms"] for f in facts] == [0.0, 0.0, 30.0, 30.0]
    assert [f["moved"] for f in facts] == [0, 0, 0, 1]
    assert facts[2]["beside"] == {"dc-gpu-records": 30.0}
    result = run_with_package([PYTHON, os.path.join(BENCH, "thread_steps.py"), str(path),
                               "--every"])
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert "4 steps, median 74.50 ms" in out
    assert "| slow | 2 | 89.00 | 79.00 | 9.00 | 2.0 | 0.50 | 30.00 | 30.00 |" in out
    assert "| rest | 2 | 60.50 | 59.50 | 0.00 | 0.0 | 0.00 | 0.00 | 30.00 |" in out
    assert "beside: dc-gpu-records 30.0" in out


@pytest.mark.parametrize("content, message", [
    ({"steps": []}, "not a thread log"),
    ({"stepping_tid": 1, "siblings": {}, "steps": []}, "no steps"),
    ({"stepping_tid": 1, "siblings": {}, "steps": [{"ms": 1.0, "threads": {}}]},
     "without the stepping thread 1"),
    ({"stepping_tid": 1, "siblings": {}, "steps": [{"ms": 1.0, "threads": {"1": {"cpu": 0}}}]},
     "lacks a field or is malformed"),
    # Another thread without its name, on a CPU away from the stepping one's.
    ({"stepping_tid": 1, "siblings": {}, "steps": [{"ms": 1.0, "threads": {
        "1": {"name": "python3", "cpu": 0, "cpu_before": 0, "run_ms": 1.0, "wait_ms": 0.0,
              "involuntary": 0},
        "2": {"cpu": 5, "cpu_before": 5, "run_ms": 1.0}}}]},
     "lacks a field or is malformed"),
])
def test_thread_steps_refuses_what_is_not_a_thread_log(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    result = run_with_package([PYTHON, os.path.join(BENCH, "thread_steps.py"), str(path)])
    assert result.returncode != 0
    assert message in result.stderr.decode()


def test_the_workload_writes_a_thread_log_for_its_timed_steps(tmp_path):
    path = tmp_path / "threads.json"
    result = run_with_package([PYTHON, WORKLOAD, "--model", "mlp", "--device", "cpu",
                               "--warmup", "1", "--steps", "2", "--blocks", "2",
                               "--thread-log", str(path)])
    assert result.returncode == 0, result.stderr.decode()
    steps = json.loads(path.read_text())["steps"]
    assert len(steps) == 4 and {step["block"] for step in steps} == {"timed"}


def test_alternating_rounds_log_each_blocks_steps_under_its_name(tmp_path):
    path = tmp_path / "threads.json"
    result = run_with_package([PYTHON, WORKLOAD, "--model", "mlp", "--device", "cpu",
                               "--warmup", "1", "--steps", "2", "--ab-rounds", "2",
                               "--ab-variants", "gpu-off", "--thread-log", str(path)])
    assert result.returncode == 0, result.stderr.decode()
    # Warm-up steps and the first plain block before the regions are not logged.
    blocks = [step["block"] for step in json.loads(path.read_text())["steps"]]
    assert blocks == ["plain"] * 2 + ["gpu-off"] * 2 + ["plain"] * 2 + ["gpu-off"] * 2
    printed = run_with_package([PYTHON, os.path.join(BENCH, "thread_steps.py"), str(path)])
    assert printed.returncode == 0, printed.stderr.decode()
    out = printed.stdout.decode()
    assert "| plain | 4 |" in out and "| gpu-off | 4 |" in out
    assert "Less the plain steps" in out


def test_blocks_sum_up_each_threads_time_per_step_against_the_plain_steps(tmp_path):
    def step(block, ms, mine, waited, sampler=None, helpers=()):
        threads = {"10": {"name": "python3", "cpu": 0, "cpu_before": 0, "run_ms": mine,
                          "wait_ms": waited, "involuntary": 0}}
        if sampler is not None:
            threads["11"] = {"name": "dc-cpu-sampler", "cpu": 1, "cpu_before": 1,
                             "run_ms": sampler, "wait_ms": 0.0, "involuntary": 0}
        for index, ran in enumerate(helpers):
            threads[str(20 + index)] = {"name": "pt_autograd_0", "cpu": 2, "cpu_before": 2,
                                        "run_ms": ran, "wait_ms": 0.0, "involuntary": 0}
        return {"ms": ms, "block": block, "threads": threads}
    path = tmp_path / "threads.json"
    path.write_text(json.dumps({"stepping_tid": 10, "siblings": {}, "steps": [
        step("plain", 10.0, 5.0, 0.0, helpers=(4.0,)),
        step("plain", 12.0, 6.0, 0.0, helpers=(5.0,)),
        step("sampled", 13.0, 6.5, 0.5, sampler=1.0, helpers=(3.0, 3.0)),
        step("sampled", 15.0, 7.5, 0.5, sampler=0.0, helpers=(3.5, 3.5))]}))
    printer = bench_module("thread_steps")
    blocks = printer.per_block(printer.load(str(path)))
    assert list(blocks) == ["plain", "sampled"]
    # Two threads of one name are summed, then averaged over the steps.
    assert blocks["sampled"] == {"steps": 2, "ms": 14.0, "stepping": 7.0,
                                 "stepping waited": 0.5, "dc-cpu-sampler": 0.5,
                                 "pt_autograd_0": 6.5}
    result = run_with_package([PYTHON, os.path.join(BENCH, "thread_steps.py"), str(path)])
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert ("| block | steps | step | stepping thread | it waited | pt_autograd_0 "
            "| dc-cpu-sampler |") in out
    assert "| plain | 2 | 11.00 | 5.50 | 0.00 | 4.50 | 0.00 |" in out
    assert "| sampled | +3.00 | +1.50 | +0.50 | +2.00 | +0.50 |" in out
