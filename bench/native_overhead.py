"""Cost of native frames (`deepcontext run --native`) per unwinder, on CPU.

Runs the small-ops CPU training loop (workloads/small_ops_train.py) without a
profiler, under `deepcontext run`, and under `deepcontext run --native` with
each unwinder this machine offers (DEEPCONTEXT_UNWINDER: libunwind,
cfi-cache = .eh_frame rules cached per pc, glibc-backtrace = libgcc, what a
machine without libunwind used before), interleaved, several times in one
invocation. Steps are timed in process CPU time (all threads, the
profiler's included) unless --wall-clock: a shared machine's other load
then does not drown the difference. Prints median step and mean step (a mean far above the median
means first-time pauses) and their ratios to no profiler.

    python3 bench/native_overhead.py [--build build] [--python /usr/bin/python3]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "workloads", "small_ops_train.py")
UNWINDERS = ("libunwind", "cfi-cache", "glibc-backtrace")


def run(command, env=None):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (command, result.stderr.decode()[-3000:]))
    return result.stdout.decode()


def step_times(output):
    values = dict(token.split("=", 1) for token in output.split() if "=" in token)
    if "step_median_ms" not in values:
        raise RuntimeError("workload printed no step times: %r" % output)
    return float(values["step_median_ms"]), float(values["step_mean_ms"])


def unwinder_used(cli, profile):
    """The unwinder a --native profile recorded (its dlmonitor metadata)."""
    tree = json.loads(run([cli, "export", "--format", "json", profile]))
    described = tree["sources"][0]["metadata"].get("dlmonitor", "")
    for name in UNWINDERS:
        if "native: " + name in described:
            return name
    return "? (%s)" % described


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", default="build")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--wall-clock", action="store_true",
                        help="time steps in wall time instead of process CPU time")
    args = parser.parse_args()
    cli = os.path.join(args.build, "bin", "deepcontext")
    work = tempfile.mkdtemp(prefix="dc-native-bench-")
    base = [args.python, WORKLOAD, "--iters", str(args.iters), "--layers", str(args.layers)]
    if not args.wall_clock:
        base.append("--cpu-clock")
    variants = [("no profiler", None, None), ("deepcontext run", [], None)]
    for name in UNWINDERS:
        variants.append(("run --native, " + name, ["--native"], name))
    times = {name: [] for name, _, _ in variants}
    used = {}
    for _ in range(args.repeats):
        for name, flags, unwinder in variants:
            if flags is None:
                times[name].append(step_times(run(base)))
                continue
            profile = os.path.join(work, "p.dctx")
            env = dict(os.environ)
            if unwinder is not None:
                env["DEEPCONTEXT_UNWINDER"] = unwinder
            times[name].append(step_times(run(
                [cli, "run", "-q", "-o", profile] + flags + ["--"] + base, env=env)))
            if unwinder is not None and name not in used:
                used[name] = unwinder_used(cli, profile)
    plain = statistics.median(m for m, _ in times["no profiler"])
    print("small_ops_train.py, %d layers, %d steps per run, %d interleaved runs; "
          "median over runs of each run's median / mean step (%s)" % (
              args.layers, args.iters, args.repeats,
              "wall time" if args.wall_clock else "process CPU time, all threads"))
    print("| variant | unwinder used | median step (ms) | ratio | mean step (ms) | mean / median |")
    print("|---|---|---|---|---|---|")
    for name, _, _ in variants:
        median = statistics.median(m for m, _ in times[name])
        mean = statistics.median(m for _, m in times[name])
        print("| %s | %s | %.3f | %.3fx | %.3f | %.3f |" % (
            name, used.get(name, "-"), median, median / plain, mean, mean / median))


if __name__ == "__main__":
    main()
