"""What DeepContext adds to each torch op on a real training step, on the CPU.

A launch-bound model (the MLP of workloads/gpu_models.py: 48 tiny Linear
layers, forward, backward and SGD, about 2,500 torch ops per step) trains on
one CPU thread. Each child process alternates, in the one process, blocks of
plain steps, steps under a RecordFunction callback that does nothing (torch's
own cost of observing ops, workloads/record_function_floor.py), under that
callback asking for RecordFunction's ids (what pairing ops by RecordFunction's
handle costs) and steps inside deepcontext.profile() (cpu_time sampled, the
default). Children of
--build and of each --baseline build alternate, several repeats in one
invocation, so that a runtime change's effect shows in one run:

    python3 bench/torch_op_cost.py [--build build] [--baseline OLD_BUILD]
                                   [--steps 30] [--rounds 5] [--repeats 3]

Prints per build the median step of each variant, the profiled/plain and
profiled/floor ratios, and the nanoseconds per op that DeepContext adds above
the floor. Unlike python_op_cost.py (a synthetic op loop), this goes through
torch's RecordFunction, the adapter, nested and backward ops and the op
metrics. Needs torch (Debian's python3-torch will do).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def child(steps, rounds):
    import time
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.join(HERE, "workloads"))
    import deepcontext
    from gpu_models import TinyMLP
    from record_function_floor import RecordFunctionFloor

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    data, target = torch.randn(2, 64), torch.randn(2)

    def step():
        optimizer.zero_grad(set_to_none=True)
        F.mse_loss(model(data), target).backward()
        optimizer.step()

    def timed(count):
        times = []
        for _ in range(count):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        return times

    floor = RecordFunctionFloor(torch)
    times = {"plain": [], "floor": [], "floor-ids": [], "profiled": []}
    with tempfile.TemporaryDirectory(prefix="dc-opcost-") as folder:
        path = os.path.join(folder, "region.dctx")
        timed(10)
        with floor.enabled():
            timed(10)
        with deepcontext.profile(path):  # builds or loads the adapter: not timed
            timed(10)
        for _ in range(rounds):
            times["plain"] += timed(steps)
            with floor.enabled():
                times["floor"] += timed(steps)
            with floor.enabled(ids=True):
                times["floor-ids"] += timed(steps)
            with deepcontext.profile(path):
                times["profiled"] += timed(steps)
    with torch.autograd.profiler.profile() as events:
        step()
    print(" ".join("%s=%.6f" % (name, statistics.median(values))
                   for name, values in times.items()),
          "ops=%d" % len(events.function_events))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--baseline", action="append", default=[],
                        help="another build (or a prefix holding its python/, lib/ "
                             "and share/), timed interleaved with --build")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--steps", type=int, default=30, help="steps per block")
    parser.add_argument("--rounds", type=int, default=5,
                        help="blocks of each variant per process")
    parser.add_argument("--repeats", type=int, default=3, help="processes per build")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.steps, args.rounds)
        return
    builds = [args.build] + args.baseline
    results = {build: [] for build in builds}
    for _ in range(args.repeats):
        for build in builds:
            env = dict(os.environ,
                       PYTHONPATH=os.path.abspath(os.path.join(build, "python")))
            out = subprocess.run(
                [args.python, os.path.abspath(__file__), "--child",
                 "--steps", str(args.steps), "--rounds", str(args.rounds)],
                env=env, check=True, capture_output=True, text=True).stdout
            fields = dict(item.split("=") for item in out.split())
            results[build].append({key: float(value) for key, value in fields.items()})
    print("| build | plain (ms) | floor (ms) | profiled (ms) | profiled/plain "
          "| profiled/floor | ns per op above floor | ids, ns per op |")
    print("|---|---|---|---|---|---|---|---|")
    for build, runs in results.items():
        med = {key: statistics.median(run[key] for run in runs)
               for key in ("plain", "floor", "profiled", "ops")}
        # Ratios and per-op costs within each process, then their median: the
        # variants of one process ran under the same machine load.
        def per_run(value):
            return statistics.median(value(run) for run in runs)
        print("| %s | %.3f | %.3f | %.3f | %.3fx | %.3fx | %.0f | %.0f |" % (
            build, 1e3 * med["plain"], 1e3 * med["floor"], 1e3 * med["profiled"],
            per_run(lambda run: run["profiled"] / run["plain"]),
            per_run(lambda run: run["profiled"] / run["floor"]),
            per_run(lambda run: 1e9 * (run["profiled"] - run["floor"]) / run["ops"]),
            per_run(lambda run: 1e9 * (run["floor-ids"] - run["floor"]) / run["ops"])))
    print("(median of %d processes per build; each process: the median step of %d "
          "blocks of %d steps per variant, ratios within it; %d torch ops per step; "
          "ids: the floor asking for RecordFunction's ids, minus the floor)"
          % (args.repeats, args.rounds, args.steps, med["ops"]))


if __name__ == "__main__":
    main()
