"""Analyzer benchmark: `deepcontext analyze` and `deepcontext.load` on a
generated 1M-node profile (bench/analyze_profile_gen.cc).

    python3 bench/analyze_bench.py [--build build] [--nodes 1000000] [--repeats 3]

Prints the median wall and CPU time of each step; CPU time is compared with
the 2 s budget of issue 17 (wall time on a busy shared machine is mostly
waiting for a core). Steps:
the CLI end to end (read, tree, every rule, text output), the same with
--format json, `deepcontext report` (which now runs the analyzer too),
deepcontext.load() and load() + findings() from Python.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def cpu_seconds():
    """CPU time of this process and its finished children: on a shared
    machine wall time mostly measures the neighbours."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(function, repeats):
    """Median wall and CPU seconds of repeats calls."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), cpu_seconds()
        function()
        walls.append(time.perf_counter() - wall)
        cpus.append(cpu_seconds() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--nodes", type=int, default=1000000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    cli = os.path.join(build, "bin", "deepcontext")
    sys.path.insert(0, os.path.join(build, "python"))
    import deepcontext

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "big.dctx")
        subprocess.run([os.path.join(build, "bin", "analyze_profile_gen"), path,
                        str(args.nodes)], check=True)
        print("file size: %.1f MiB" % (os.path.getsize(path) / 2**20))

        def run(*command):
            subprocess.run(list(command), check=True, stdout=subprocess.DEVNULL)

        rows = [
            ("deepcontext analyze", lambda: run(cli, "analyze", path)),
            ("deepcontext analyze --format json", lambda: run(cli, "analyze", "--format", "json",
                                                              path)),
            ("deepcontext report --depth 3", lambda: run(cli, "report", path, "--depth", "3")),
            ("deepcontext.load()", lambda: deepcontext.load(path)),
            ("deepcontext.load().findings()", lambda: deepcontext.load(path).findings()),
        ]
        profile = deepcontext.load(path)
        print("nodes: %d, findings: %d" % (len(profile), len(profile.findings())))
        print("%-36s %8s %8s  %s" % ("", "wall", "CPU", "CPU / 2 s budget"))
        for name, function in rows:
            wall, cpu = timed(function, args.repeats)
            print("%-36s %6.3f s %6.3f s  %.2fx" % (name, wall, cpu, cpu / 2.0))


if __name__ == "__main__":
    main()
