"""Overhead of `deepcontext run` on a CPU training loop with many small ops.

Runs the workload plainly, under the profiler and under the profiler with
--native (native frames), interleaved, several times
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


def run(command):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
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
    cli = os.path.join(args.build, "bin", "deepcontext")
    workdir = tempfile.mkdtemp(prefix="dc-bench-")
    profile = os.path.join(workdir, "bench.dctx")
    base = [args.python, WORKLOAD, "--iters", str(args.iters)]

    plain, profiled, native = [], [], []
    run([cli, "run", "-q", "-o", profile, "--"] + base[:2] + ["--iters", "2"])  # warm caches
    for _ in range(args.repeats):
        plain.append(loop_seconds(run(base)))
        profiled.append(loop_seconds(run([cli, "run", "-q", "-o", profile, "--"] + base)))
        native.append(loop_seconds(run([cli, "run", "-q", "--native", "-o",
                                        profile + ".native", "--"] + base)))
    calls = total_calls(cli, profile)
    ops_per_iteration = calls / (args.iters + 1)  # +1 warm-up step
    t_plain, t_prof = statistics.median(plain), statistics.median(profiled)
    t_native = statistics.median(native)

    sizes = {}
    for iters in (args.iters // 10, args.iters):
        path = os.path.join(workdir, "size_%d.dctx" % iters)
        run([cli, "run", "-q", "-o", path, "--", args.python, WORKLOAD, "--iters", str(iters)])
        sizes[iters] = os.path.getsize(path)

    ops = ops_per_iteration * args.iters
    print("| measure | without profiler | deepcontext run | deepcontext run --native |")
    print("|---|---|---|---|")
    print("| loop time, median of %d (s) | %.3f | %.3f | %.3f |"
          % (args.repeats, t_plain, t_prof, t_native))
    print("| overhead ratio | 1.00x | %.2fx | %.2fx |" % (t_prof / t_plain, t_native / t_plain))
    print("| ops/s | %.0f | %.0f | %.0f |" % (ops / t_plain, ops / t_prof, ops / t_native))
    print("| cost per op (us) | - | %.2f | %.2f |"
          % ((t_prof - t_plain) / ops * 1e6, (t_native - t_plain) / ops * 1e6))
    print("| --native extra per op (us) | - | - | %.2f |" % ((t_native - t_prof) / ops * 1e6))
    print()
    print("ops per iteration (profile calls): %.0f" % ops_per_iteration)
    a, b = sorted(sizes)
    print("profile size: %d iterations %d bytes, %d iterations %d bytes (ratio %.2f)"
          % (a, sizes[a], b, sizes[b], sizes[b] / sizes[a]))


if __name__ == "__main__":
    main()
