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

--baseline BUILD adds `deepcontext run` and cfi-cache rows from another
build (say main's), interleaved with the rest: a runtime change's effect in
one run. --unwinders picks the unwinders timed.
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
    parser.add_argument("--baseline", metavar="BUILD",
                        help="also time deepcontext run and run --native (cfi-cache) of "
                             "this other build")
    parser.add_argument("--unwinders", default=",".join(UNWINDERS),
                        help="comma-separated, of %s" % ", ".join(UNWINDERS))
    args = parser.parse_args()
    unwinders = [name for name in args.unwinders.split(",") if name]
    for name in unwinders:
        if name not in UNWINDERS:
            parser.error("unknown unwinder %r" % name)
    with tempfile.TemporaryDirectory(prefix="dc-native-bench-") as work:
        measure(args, unwinders, work)


def measure(args, unwinders, work):
    """Times every variant, profiles into `work`, prints the table."""
    cli = os.path.join(args.build, "bin", "deepcontext")
    base = [args.python, WORKLOAD, "--iters", str(args.iters), "--layers", str(args.layers)]
    if not args.wall_clock:
        base.append("--cpu-clock")
    # (name, run flags or None for no profiler, unwinder, CLI)
    variants = [("no profiler", None, None, cli), ("deepcontext run", [], None, cli)]
    for name in unwinders:
        variants.append(("run --native, " + name, ["--native"], name, cli))
    if args.baseline:
        baseline = os.path.join(args.baseline, "bin", "deepcontext")
        variants.append(("baseline: deepcontext run", [], None, baseline))
        variants.append(("baseline: run --native, cfi-cache", ["--native"], "cfi-cache",
                         baseline))
    times = {name: [] for name, _, _, _ in variants}
    used = {}
    for _ in range(args.repeats):
        for name, flags, unwinder, variant_cli in variants:
            if flags is None:
                times[name].append(step_times(run(base)))
                continue
            profile = os.path.join(work, "p.dctx")
            env = dict(os.environ)
            if unwinder is not None:
                env["DEEPCONTEXT_UNWINDER"] = unwinder
            times[name].append(step_times(run(
                [variant_cli, "run", "-q", "-o", profile] + flags + ["--"] + base, env=env)))
            if unwinder is not None and name not in used:
                used[name] = unwinder_used(variant_cli, profile)
    plain = statistics.median(m for m, _ in times["no profiler"])
    print("small_ops_train.py, %d layers, %d steps per run, %d interleaved runs; "
          "median over runs of each run's median / mean step (%s)" % (
              args.layers, args.iters, args.repeats,
              "wall time" if args.wall_clock else "process CPU time, all threads"))
    print("| variant | unwinder used | median step (ms) | ratio | mean step (ms) | mean / median |")
    print("|---|---|---|---|---|---|")
    for name, _, _, _ in variants:
        median = statistics.median(m for m, _ in times[name])
        mean = statistics.median(m for _, m in times[name])
        print("| %s | %s | %.3f | %.3fx | %.3f | %.3f |" % (
            name, used.get(name, "-"), median, median / plain, mean, mean / median))


if __name__ == "__main__":
    main()
