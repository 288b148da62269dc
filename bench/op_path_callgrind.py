"""Instructions and cache misses of the runtime's per-op path inside a real
torch training step, counted by valgrind's callgrind: numbers that do not
drift with the machine's load, for changes too small for a timed run.

    python3 bench/op_path_callgrind.py [--build build] [--baseline BUILD]
                                       [--steps 4] [--plain]

The launch-bound MLP of workloads/gpu_models.py trains on the CPU under
`deepcontext run` inside callgrind (L1 instruction and data caches
simulated, 32 KiB each). Between two ops torch and Python run their own
code, which evicts the runtime's code and data from the L1 caches as a real
step does: the misses counted here are the ones an op pays in a training
step, which bench/event_cost.cc's tight loop never sees. Per build it
prints, per op recorded (the profile's calls):

  runtime Ir, I1mr, D1mr, D1mw   the runtime library and the torch adapter
  process Ir, I1mr               the whole process, per op (--plain adds a
                                 run without the profiler to compare with)

Each build runs in its own process, all of them at once (one core each);
startup (importing torch under valgrind) takes minutes. Needs valgrind and
torch (Debian's python3-torch).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from cpu_overhead import total_calls

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "workloads", "gpu_models.py")
EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")
NUMBER = re.compile(r"[\d,]+|\.")


def object_totals(annotated):
    """Sums callgrind_annotate's per-function lines by the object file each
    names in brackets at its end; '.' stands for 0."""
    totals = {}
    for line in annotated.splitlines():
        tokens = re.sub(r"\(\s*[\d.]+%\)", "", line).split()
        values = []
        while tokens and len(values) < len(EVENTS) and NUMBER.fullmatch(tokens[0]):
            token = tokens.pop(0)
            values.append(0 if token == "." else int(token.replace(",", "")))
        if len(values) < len(EVENTS) or "PROGRAM TOTALS" in line:
            continue
        found = re.search(r"\[([^\[\]]*)\]\s*$", line)
        name = os.path.basename(found.group(1)) if found else "?"
        sums = totals.setdefault(name, [0] * len(EVENTS))
        for i, value in enumerate(values):
            sums[i] += value
    return totals


def is_runtime(name):
    # The torch adapter is compiled per torch version into the adapter
    # cache as torch-<version>-abi<n>-<hash>.so.
    return name.startswith("libdeepcontext.so") or re.fullmatch(
        r"torch-.*-abi\d+-[0-9a-f]+\.so", name) is not None


def run_one(build, steps, profiled, workdir, python):
    label = os.path.basename(os.path.normpath(build)) + ("" if profiled else "-plain")
    out = tempfile.mkdtemp(prefix=label + "-", dir=workdir)
    profile = os.path.join(out, "mlp.dctx")
    workload = [python, WORKLOAD, "--model", "mlp", "--device", "cpu",
                "--steps", str(steps), "--warmup", "1"]
    command = workload
    if profiled:
        command = [os.path.join(build, "bin", "deepcontext"), "run", "-o", profile,
                   "--"] + workload
    valgrind = ["valgrind", "--tool=callgrind", "--trace-children=yes", "--cache-sim=yes",
                "--callgrind-out-file=" + os.path.join(out, "callgrind.%p")]
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(build), "python"))
    result = subprocess.run(valgrind + command, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, check=False)
    if result.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (label, result.stderr[-3000:]))
    # The launcher and the workload each leave a file: the workload's is
    # the larger one.
    files = [os.path.join(out, f) for f in os.listdir(out) if f.startswith("callgrind.")]
    largest = max(files, key=os.path.getsize)
    annotated = subprocess.run(["callgrind_annotate", "--threshold=100", largest],
                               stdout=subprocess.PIPE, text=True, check=True).stdout
    totals = object_totals(annotated)
    calls = None
    if profiled:
        calls = total_calls(os.path.join(build, "bin", "deepcontext"), profile)
    return label, totals, calls


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--baseline", action="append", default=[],
                        help="another build (or a prefix holding its bin/, lib/, python/)")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--plain", action="store_true",
                        help="also run the workload without the profiler")
    parser.add_argument("--python", default="/usr/bin/python3")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="dc-callgrind-")
    jobs = [(build, True) for build in [args.build] + args.baseline]
    if args.plain:
        jobs.append((args.build, False))
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        results = list(pool.map(
            lambda job: run_one(job[0], args.steps, job[1], workdir, args.python), jobs))

    calls = next(c for _, _, c in results if c)
    print("| run | ops | runtime Ir/op | I1mr/op | D1mr/op | D1mw/op "
          "| process Ir/op | process I1mr/op |")
    print("|---|---|---|---|---|---|---|---|")
    for label, totals, own_calls in results:
        ops = own_calls or calls
        runtime = [sum(v[i] for name, v in totals.items() if is_runtime(name))
                   for i in range(len(EVENTS))]
        process = [sum(v[i] for v in totals.values()) for i in range(len(EVENTS))]
        per_op = lambda values, event: values[EVENTS.index(event)] / ops
        print("| %s | %d | %.0f | %.1f | %.1f | %.1f | %.0f | %.1f |" % (
            label, ops, per_op(runtime, "Ir"), per_op(runtime, "I1mr"),
            per_op(runtime, "D1mr"), per_op(runtime, "D1mw"),
            per_op(process, "Ir"), per_op(process, "I1mr")))
    print("(ops: the profile's calls; a plain run is divided by the profiled run's)")
    print("callgrind files under %s" % workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
