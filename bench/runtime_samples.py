"""The runtime's CPU samples in a training step, one build against another:
where the step time of a shared machine drifts more than a per-op change
moves it, the samples that land in the runtime's own code still tell the
change apart.

    python3 bench/runtime_samples.py --build B --baseline OTHER [--model mlp]
        [--steps 300] [--rounds 3] [--native] [--device cuda]
        [--frequency 4999] [--perf "perf"] [--top 15]

Each round runs bench/workloads/gpu_models.py under `deepcontext run` of
every build, one process after the other (alternating, so that the
machine's drift falls on all of them), inside `perf record -e cpu-clock`,
which samples the timed steps only (the workload switches it on and off
through perf's control FIFO). It prints, per process, the samples in the
runtime (libdeepcontext.so and the torch adapter), in CUPTI and in the
whole process, and the median step; per build, the mean over rounds and
the runtime's samples against the first build's; then the runtime's
functions with the most samples, summed over the rounds.

--perf is a command line. On a machine without perf, Debian's linux-perf
and the libraries it needs, copied into DIR, run as
"/lib64/ld-linux-x86-64.so.2 --library-path DIR DIR/perf".
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from op_path_callgrind import is_runtime

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "workloads", "gpu_models.py")
DSO_LINE = re.compile(r"^\s*[\d.]+%\s+(\d+)\s+(\S.*?)\s*$")
SYMBOL_LINE = re.compile(r"^\s*[\d.]+%\s+(\d+)\s+(\S+)\s+\[.\]\s+(.*?)\s*$")
STEP = re.compile(r"\bstep_ms=([\d.]+)")


def samples_by_dso(report):
    """`perf report --stdio -n --sort dso` text: {object: samples}."""
    totals = {}
    for line in report.splitlines():
        if line.startswith("#"):
            continue
        found = DSO_LINE.match(line)
        if found:
            name = os.path.basename(found.group(2))
            totals[name] = totals.get(name, 0) + int(found.group(1))
    return totals


def runtime_symbols(report):
    """`perf report --stdio -n --sort dso,sym` text: {function: samples}
    for the runtime's objects only."""
    totals = {}
    for line in report.splitlines():
        found = SYMBOL_LINE.match(line)
        if found and is_runtime(os.path.basename(found.group(2))):
            totals[found.group(3)] = totals.get(found.group(3), 0) + int(found.group(1))
    return totals


def summarize(by_dso):
    """(runtime, CUPTI, all) samples of one process."""
    runtime = sum(n for name, n in by_dso.items() if is_runtime(name))
    cupti = sum(n for name, n in by_dso.items() if name.startswith("libcupti"))
    return runtime, cupti, sum(by_dso.values())


def run_one(perf, build, args, workdir, label):
    """One profiled process under perf: (step ms or None, by_dso, symbols)."""
    control = os.path.join(workdir, label + ".ctl")
    ack = os.path.join(workdir, label + ".ack")
    for fifo in (control, ack):
        if os.path.exists(fifo):
            os.unlink(fifo)
        os.mkfifo(fifo)
    data = os.path.join(workdir, label + ".perf")
    command = [os.path.join(build, "bin", "deepcontext"), "run"]
    if args.native:
        command.append("--native")
    command += ["-o", os.path.join(workdir, label + ".dctx"), "--", args.python, WORKLOAD,
                "--model", args.model, "--steps", str(args.steps), "--device", args.device]
    record = perf + ["record", "-q", "-e", "cpu-clock", "-F", str(args.frequency), "-D", "-1",
                     "--control", "fifo:%s,%s" % (control, ack), "-o", data, "--"]
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(build), "python"),
               PERF_CTL_FIFO=control, PERF_ACK_FIFO=ack)
    result = subprocess.run(record + command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, check=False)
    if result.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (label, result.stdout[-3000:]))
    found = STEP.findall(result.stdout)
    report = lambda sort: subprocess.run(
        perf + ["report", "-i", data, "--stdio", "-n", "--sort", sort],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout
    by_dso = samples_by_dso(report("dso"))
    symbols = runtime_symbols(report("dso,sym"))
    os.unlink(data)
    return (float(found[-1]) if found else None), by_dso, symbols


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--baseline", action="append", default=[],
                        help="another build (or a prefix holding its bin/, lib/, python/)")
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--native", action="store_true", help="deepcontext run --native")
    parser.add_argument("--device", default="cuda", help="cuda, or cpu")
    parser.add_argument("--frequency", type=int, default=4999, help="samples per second")
    parser.add_argument("--perf", default="perf", help="perf's command line")
    parser.add_argument("--top", type=int, default=15, help="functions listed per build")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    perf = shlex.split(args.perf)
    if shutil.which(perf[0]) is None and not os.path.exists(perf[0]):
        parser.error("perf not found: %s (see --perf)" % args.perf)
    builds = [args.build] + args.baseline
    workdir = tempfile.mkdtemp(prefix="dc-samples-")

    print("| round | build | median step ms | runtime samples | CUPTI samples | all samples |")
    print("|---|---|---|---|---|---|")
    # By position: the same build may be given twice (to see the scatter).
    per_build = [[] for _ in builds]
    functions = [{} for _ in builds]
    for round_index in range(1, args.rounds + 1):
        for number, build in enumerate(builds):
            label = "r%d-b%d" % (round_index, number)
            step, by_dso, symbols = run_one(perf, build, args, workdir, label)
            runtime, cupti, total = summarize(by_dso)
            per_build[number].append((runtime, cupti, total))
            for name, count in symbols.items():
                functions[number][name] = functions[number].get(name, 0) + count
            print("| %d | %s | %s | %d | %d | %d |" % (
                round_index, build, "%.2f" % step if step else "n/a", runtime, cupti, total),
                flush=True)

    print()
    print("| build | runtime samples, mean | against %s | CUPTI, mean | all, mean |" % builds[0])
    print("|---|---|---|---|---|")
    mean = lambda values: sum(values) / len(values)
    first = mean([r for r, _, _ in per_build[0]])
    for number, build in enumerate(builds):
        runtime = mean([r for r, _, _ in per_build[number]])
        print("| %s | %.0f | %.3f | %.0f | %.0f |" % (
            build, runtime, runtime / first if first else float("nan"),
            mean([c for _, c, _ in per_build[number]]),
            mean([t for _, _, t in per_build[number]])))
    for number, build in enumerate(builds):
        print()
        print("%s: the runtime's functions, samples over %d rounds" % (build, args.rounds))
        ranked = sorted(functions[number].items(), key=lambda item: -item[1])[:args.top]
        for name, count in ranked:
            print("%8d  %s" % (count, name))
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
