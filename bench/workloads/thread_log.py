"""Where a process's threads ran during each timed step (Linux only).

A step that takes longer than its neighbours either ran as long on the
CPU, and ran slower there (another thread on the same core's other
hardware thread, a slower core, colder caches), or waited for a CPU while
another thread ran on it. The kernel keeps both per thread: the time it
ran and the time it waited runnable (/proc/PID/task/TID/schedstat), its
involuntary context switches (status) and the CPU it last ran on (stat).
ThreadLog reads them for every thread before and after each step,
outside the step's timing, and keeps the differences, with the CPUs'
hardware-thread siblings, so that a slow step can be matched with what
ran beside the step's thread (bench/thread_steps.py prints them). With
--ab-rounds each step carries its block's name (plain or a region), so
that each thread's time per step can be compared region by region. Other
threads' times advance at the scheduler's ticks while they run: one
step's value can be a tick off, a mean over steps is not.
"""

import glob
import json
import os
import threading
import time


def cpu_siblings():
    """{cpu: [cpus sharing its core, itself included]} from sysfs."""
    siblings = {}
    for path in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list"):
        cpu = int(path.split("/")[5][3:])
        try:
            with open(path) as f:
                siblings[cpu] = parse_cpu_list(f.read())
        except OSError:
            continue
    return siblings


def parse_cpu_list(text):
    """'0-2,8' -> [0, 1, 2, 8]."""
    cpus = []
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def read_thread(task_dir):
    """One thread's counters, or None when it ended meanwhile (or they
    cannot be read): {name, cpu, run_ns, wait_ns, involuntary}."""
    try:
        with open(os.path.join(task_dir, "stat")) as f:
            stat = f.read()
        with open(os.path.join(task_dir, "schedstat")) as f:
            run_ns, wait_ns = (int(v) for v in f.read().split()[:2])
        involuntary = 0
        with open(os.path.join(task_dir, "status")) as f:
            for line in f:
                if line.startswith("nonvoluntary_ctxt_switches:"):
                    involuntary = int(line.split()[1])
        # The name is in parentheses and may hold spaces; fields follow it.
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        # Field 39 of stat ("processor") is the 37th after the name.
        cpu = int(fields[36])
    except (OSError, ValueError, IndexError):
        return None
    return {"name": name, "cpu": cpu, "run_ns": run_ns, "wait_ns": wait_ns,
            "involuntary": involuntary}


def snapshot(task_root="/proc/self/task"):
    """{tid: counters} of every thread of the process."""
    threads = {}
    for task_dir in glob.glob(os.path.join(task_root, "[0-9]*")):
        counters = read_thread(task_dir)
        if counters is not None:
            threads[int(os.path.basename(task_dir))] = counters
    return threads


class ThreadLog:
    """Counters of every thread, step by step: call step_started() and
    step_ended() around each timed step (outside its timing), then write()."""

    def __init__(self, task_root="/proc/self/task"):
        self.stepping_tid = threading.get_native_id()
        if read_thread(os.path.join(task_root, str(self.stepping_tid))) is None:
            raise RuntimeError(
                "cannot read this thread's counters under %s (stat, schedstat and status: "
                "Linux with scheduler statistics)" % task_root)
        self.siblings = cpu_siblings()
        self.task_root = task_root
        self.steps = []
        self._before = {}
        self._cpu_before = 0

    def step_started(self):
        self._before = snapshot(self.task_root)
        self._cpu_before = time.thread_time_ns()

    def step_ended(self, step_ms, block=None):
        """Keeps the step's counters, under `block` (a region's name) if
        given."""
        # schedstat advances a running thread's time at scheduler ticks only;
        # the stepping thread's own clock is exact.
        stepping_ran = time.thread_time_ns() - self._cpu_before
        threads = {}
        for tid, counters in snapshot(self.task_root).items():
            # A thread started during the step counts from zero.
            before = self._before.get(tid, {"run_ns": 0, "wait_ns": 0, "involuntary": 0})
            ran = (stepping_ran if tid == self.stepping_tid
                   else counters["run_ns"] - before["run_ns"])
            waited = counters["wait_ns"] - before["wait_ns"]
            if ran == 0 and waited == 0 and tid != self.stepping_tid:
                continue  # idle all step: left out to keep the log small
            threads[str(tid)] = {
                "name": counters["name"], "cpu": counters["cpu"],
                "cpu_before": before.get("cpu", counters["cpu"]),
                "run_ms": round(ran / 1e6, 4), "wait_ms": round(waited / 1e6, 4),
                "involuntary": counters["involuntary"] - before["involuntary"]}
        step = {"ms": round(step_ms, 4), "threads": threads}
        if block is not None:
            step["block"] = block
        self.steps.append(step)

    def write(self, path):
        with open(path, "w") as f:
            json.dump({"stepping_tid": self.stepping_tid,
                       "siblings": {str(cpu): cpus for cpu, cpus in sorted(self.siblings.items())},
                       "steps": self.steps}, f)
