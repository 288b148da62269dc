#!/usr/bin/env python3
"""Time and peak memory of `deepcontext report` and `export` on large profiles.

Generates synthetic profiles with build/bin/large_profile (a calling context
tree shaped like a long training run, 1M and 7M nodes by default, and a
100k-deep recursion for the bottom-up view), then runs each command on each
profile and prints wall time, CPU time and peak RSS, with the targets and the
7M/1M ratios from the same run:

    python3 bench/report_scale.py [--build build] [--sizes 1000000,7000000]
                                  [--keep DIR]

Peak RSS is the child's own maximum (wait4), so commands never inflate each
other's numbers. Wall time depends on the machine's load; CPU time less so.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

TARGETS = {  # nodes -> (seconds, MB) the report must stay under
    1_000_000: (2.0, 1000),
    7_000_000: (15.0, 1000),
}


def run_measured(argv):
    """Runs argv with stdout discarded; returns (wall s, cpu s, peak MB)."""
    start = time.monotonic()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(argv, stdout=devnull, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    stderr = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(argv)} failed ({code}): {stderr.strip()}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--sizes", default="1000000,7000000",
                        help="comma-separated node counts of the cct profiles")
    parser.add_argument("--keep", help="write the profiles here and keep them")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if not sizes or min(sizes) < 1:
        sys.exit("--sizes needs positive node counts")
    cli = os.path.join(args.build, "bin", "deepcontext")
    generator = os.path.join(args.build, "bin", "large_profile")
    for tool in (cli, generator):
        if not os.access(tool, os.X_OK):
            sys.exit(f"{tool} not built (cmake --build {args.build})")

    workdir = args.keep or tempfile.mkdtemp(prefix="dctx-scale-")
    os.makedirs(workdir, exist_ok=True)
    profiles = []
    for nodes in sizes:
        path = os.path.join(workdir, f"cct-{nodes}.dctx")
        subprocess.run([generator, "cct", str(nodes), path], check=True,
                       stdout=subprocess.DEVNULL)
        profiles.append((f"cct {nodes:,} nodes", nodes, path))
    recursion = os.path.join(workdir, "recursion-100000.dctx")
    subprocess.run([generator, "recursion", "100000", recursion], check=True,
                   stdout=subprocess.DEVNULL)

    commands = [
        ("report", lambda p: [cli, "report", p]),
        ("report --view bottom-up", lambda p: [cli, "report", "--view",
                                               "bottom-up", p]),
        ("export --format json", lambda p: [cli, "export", "--format", "json",
                                            "-o", os.devnull, p]),
    ]
    print(f"{'profile':<22} {'file MB':>8} {'command':<24} {'wall s':>7} "
          f"{'cpu s':>7} {'peak MB':>8}  target")
    results = {}
    for label, nodes, path in profiles:
        size_mb = os.path.getsize(path) / 1e6
        for name, argv in commands:
            wall, cpu, peak = run_measured(argv(path))
            results[(nodes, name)] = (wall, cpu, peak)
            target = ""
            if name == "report" and nodes in TARGETS:
                # Wall time is what users wait for, but on a shared machine
                # it mostly measures the load; CPU time is judged apart.
                seconds, mb = TARGETS[nodes]
                verdict = lambda ok: "met" if ok else "MISSED"
                target = (f"< {seconds:g} s, < {mb} MB: wall "
                          f"{verdict(wall < seconds)}, cpu "
                          f"{verdict(cpu < seconds)}, memory "
                          f"{verdict(peak < mb)}")
            print(f"{label:<22} {size_mb:>8.1f} {name:<24} {wall:>7.2f} "
                  f"{cpu:>7.2f} {peak:>8.0f}  {target}")
    wall, cpu, peak = run_measured([cli, "report", "--view", "bottom-up",
                                    recursion])
    print(f"{'recursion 100,000 deep':<22} "
          f"{os.path.getsize(recursion) / 1e6:>8.1f} "
          f"{'report --view bottom-up':<24} {wall:>7.2f} {cpu:>7.2f} "
          f"{peak:>8.0f}  < 1 s: wall {'met' if wall < 1 else 'MISSED'}, "
          f"cpu {'met' if cpu < 1 else 'MISSED'}")
    print(f"\nload average during the run: {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs")

    if len(sizes) > 1:
        small, large = min(sizes), max(sizes)
        print(f"\nratios {large:,} / {small:,} nodes "
              f"({large / small:.1f}x the nodes):")
        for name, _ in commands:
            a = results[(small, name)]
            b = results[(large, name)]
            print(f"  {name:<24} cpu {b[1] / a[1]:5.1f}x   "
                  f"peak memory {b[2] / a[2]:5.1f}x")
    if not args.keep:
        for _, _, path in profiles:
            os.remove(path)
        os.remove(recursion)
        os.rmdir(workdir)


if __name__ == "__main__":
    main()
