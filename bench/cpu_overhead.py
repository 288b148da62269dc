"""Overhead of `deepcontext run` on a CPU training loop with many small ops.

Runs the workload plainly, under a RecordFunction callback that does nothing
(the floor of any profiler built on PyTorch's op callbacks), under the
profiler (sampled CPU time, the default), under the profiler with --native (native frames), with
--no-cpu-time (wall time only) and with --exact-cpu-time, interleaved,
several times
in one invocation, and prints a Markdown table: loop time (median), overhead
ratio, ops/s with and without the profiler (ops counted from the profile's
`calls`), and profile size for a short and a 10x longer run (aggregated
profiles stay the same size).

    python3 bench/cpu_overhead.py [--build build] [--python /usr/bin/python3]
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


def loop_seconds(output):
    for token in output.split():
        if token.startswith("loop_seconds="):
            return float(token.split("=", 1)[1])
    raise RuntimeError("workload printed no timing: %r" % output)


def run(command, env=None):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (command, result.stderr.decode()))
    return result.stdout.decode()


def total_calls(cli, profile):
    tree = json.loads(run([cli, "export", "--format", "json", profile]))
    return sum(node.get("exclusive", {}).get("calls", {}).get("sum", 0) for node in tree["nodes"])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", default="build")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--iters", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dc-bench-") as workdir:
        measure(args, workdir)


def measure(args, workdir):
    """Times every variant, profiles into `workdir`, prints the table."""
    cli = os.path.join(args.build, "bin", "deepcontext")
    profile = os.path.join(workdir, "bench.dctx")
    base = [args.python, WORKLOAD, "--iters", str(args.iters)]

    plain, floor, profiled, native, no_cpu, exact = [], [], [], [], [], []
    floor_env = dict(os.environ, PYTHONPATH=os.path.abspath(os.path.join(args.build, "python")))
    run([cli, "run", "-q", "-o", profile, "--"] + base[:2] + ["--iters", "2"])  # warm caches
    for _ in range(args.repeats):
        plain.append(loop_seconds(run(base)))
        floor.append(loop_seconds(run(base + ["--record-function-floor"], env=floor_env)))
        profiled.append(loop_seconds(run([cli, "run", "-q", "-o", profile, "--"] + base)))
        native.append(loop_seconds(run([cli, "run", "-q", "--native", "-o",
                                        profile + ".native", "--"] + base)))
        no_cpu.append(loop_seconds(run([cli, "run", "-q", "--no-cpu-time", "-o",
                                        profile + ".nocpu", "--"] + base)))
        exact.append(loop_seconds(run([cli, "run", "-q", "--exact-cpu-time", "-o",
                                       profile + ".exact", "--"] + base)))
    calls = total_calls(cli, profile)
    ops_per_iteration = calls / (args.iters + 1)  # +1 warm-up step
    t_plain, t_prof = statistics.median(plain), statistics.median(profiled)
    t_native, t_no_cpu = statistics.median(native), statistics.median(no_cpu)
    t_exact, t_floor = statistics.median(exact), statistics.median(floor)

    sizes = {}
    for iters in (args.iters // 10, args.iters):
        path = os.path.join(workdir, "size_%d.dctx" % iters)
        run([cli, "run", "-q", "-o", path, "--", args.python, WORKLOAD, "--iters", str(iters)])
        sizes[iters] = os.path.getsize(path)

    ops = ops_per_iteration * args.iters
    columns = [("floor (no-op op callback)", t_floor), ("deepcontext run", t_prof), ("deepcontext run --native", t_native),
               ("deepcontext run --no-cpu-time", t_no_cpu),
               ("deepcontext run --exact-cpu-time", t_exact)]
    print("| measure | without profiler | %s |" % " | ".join(name for name, _ in columns))
    print("|---|---|%s" % ("---|" * len(columns)))
    print("| loop time, median of %d (s) | %.3f | %s |" % (
        args.repeats, t_plain, " | ".join("%.3f" % t for _, t in columns)))
    print("| overhead ratio | 1.00x | %s |" % " | ".join("%.2fx" % (t / t_plain) for _, t in columns))
    print("| ops/s | %.0f | %s |" % (ops / t_plain, " | ".join("%.0f" % (ops / t) for _, t in columns)))
    print("| cost per op (us) | - | %s |" % " | ".join(
        "%.2f" % ((t - t_plain) / ops * 1e6) for _, t in columns))
    print()
    print("ops per iteration (profile calls): %.0f" % ops_per_iteration)
    a, b = sorted(sizes)
    print("profile size: %d iterations %d bytes, %d iterations %d bytes (ratio %.2f)"
          % (a, sizes[a], b, sizes[b], sizes[b] / sizes[a]))


if __name__ == "__main__":
    main()
