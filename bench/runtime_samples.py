"""The runtime's CPU samples in a training step, one build against another:
where the step time of a shared machine drifts more than a per-op change
moves it, the samples that land in the runtime's own code still tell the
change apart.

    python3 bench/runtime_samples.py --build B --baseline OTHER [--model mlp]
        [--steps 300] [--rounds 3] [--native] [--device cuda]
        [--frequency 4999] [--perf "perf"] [--top 15] [--libraries 10]
        [--reference plain] [--reference floor+cupti]

Each round runs bench/workloads/gpu_models.py under `deepcontext run` of
every build, one process after the other (alternating, so that the
machine's drift falls on all of them), inside `perf record -e cpu-clock`,
which samples the timed steps only (the workload switches it on and off
through perf's control FIFO). It prints, per process, the samples in the
runtime (libdeepcontext.so and the torch adapter), in CUPTI and in the
whole process, and the median step; per build, the mean over rounds and
the runtime's samples against the first build's, and the runtime's share
of each process's samples (which leaves out how fast the process ran, as
the same build's processes differ by 10 % and more); the objects (libraries,
the interpreter, the kernel) with the most samples on the application's
threads, per build; then the runtime's functions with the most samples,
summed over the rounds.

--reference adds a process per round without DeepContext: `plain` (no
profiler) or one of the workload's floors (`floor`, `cupti-records`,
`cupti`, `floor+cupti`, `floor+records`: gpu_models.py --floor). Its column in the objects'
table says which objects a profiled step spends more in than a bare one,
and than the interfaces every profiler pays: what is left of DeepContext's
share beyond its own code (torch, Python or the driver slowed down). A last
table lists the functions, of any object, with the most samples more under
the first build than under the last reference (--grown N). With a
--baseline, another lists the functions whose samples differ most between
the first build and the first baseline.

The runtime's samples are split by thread: those on the application's
threads, which its steps wait for, and those on the profiler's own threads
(named "dc-..."), which run beside them. Builds are compared, and functions
ranked, by the first.

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
STEP = re.compile(r"\bstep_ms=([\d.]+)")
# The prefix of the names the runtime gives its own threads
# (runtime/common/thread_name.h).
PROFILER_THREAD = "dc-"


def report_rows(report, fields):
    """`perf report --stdio -n -t '\\t' --sort F1,F2,...` text: (samples,
    [field values]) per row. perf puts the overhead and the sample count
    first; a symbol keeps its "[.] " marker."""
    rows = []
    for line in report.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        columns = line.split("\t")
        if len(columns) < 2 + fields or not columns[0].strip().endswith("%"):
            continue
        try:
            samples = int(columns[1].strip())
        except ValueError:
            continue
        rows.append((samples, [column.strip() for column in columns[2:2 + fields]]))
    return rows


def is_profiler_thread(comm):
    return comm.startswith(PROFILER_THREAD)


def samples_by_thread_and_dso(report):
    """`--sort comm,dso` rows: {(profiler thread?, object): samples}."""
    totals = {}
    for samples, (comm, dso) in report_rows(report, 2):
        key = (is_profiler_thread(comm), os.path.basename(dso))
        totals[key] = totals.get(key, 0) + samples
    return totals


def application_libraries(by_thread_and_dso):
    """{object: samples} on the application's threads, every object: where
    a step's time goes besides the runtime (the framework, the interpreter,
    the driver's wait for the GPU)."""
    totals = {}
    for (profiler, name), samples in by_thread_and_dso.items():
        if not profiler:
            totals[name] = totals.get(name, 0) + samples
    return totals


def application_symbols(report):
    """`--sort comm,dso,sym` rows: {(object, function): samples} on the
    application's threads, every object."""
    totals = {}
    for samples, (comm, dso, symbol) in report_rows(report, 3):
        if is_profiler_thread(comm):
            continue
        key = (os.path.basename(dso), symbol[4:] if symbol.startswith("[") else symbol)
        totals[key] = totals.get(key, 0) + samples
    return totals


def ranked_functions(first, second, count, rank):
    """The `count` functions of {(object, function): samples} `first` and
    `second` with the highest rank(first samples - second samples), ties by
    name: [(object, function, first samples, second samples)]."""
    difference = lambda key: first.get(key, 0) - second.get(key, 0)
    ranked = sorted(set(first) | set(second), key=lambda key: (-rank(difference(key)), key))
    return [(obj, function, first.get((obj, function), 0), second.get((obj, function), 0))
            for obj, function in ranked[:count]]


def grown_functions(profiled, reference, count):
    """The `count` functions of any object with the most samples more in
    `profiled` than in `reference`: [(object, function, reference samples,
    profiled samples)]."""
    return ranked_functions(reference, profiled, count, lambda difference: -difference)


def changed_functions(first, second, count):
    """The `count` functions of any object whose samples differ most between
    `first` and `second`, either way: [(object, function, first samples,
    second samples)]."""
    return ranked_functions(first, second, count, abs)


def runtime_symbols(report):
    """`--sort comm,dso,sym` rows: {function: [samples on application
    threads, on the profiler's threads]} for the runtime's objects only."""
    totals = {}
    for samples, (comm, dso, symbol) in report_rows(report, 3):
        if not is_runtime(os.path.basename(dso)):
            continue
        name = symbol[4:] if symbol.startswith("[") else symbol
        counts = totals.setdefault(name, [0, 0])
        counts[1 if is_profiler_thread(comm) else 0] += samples
    return totals


def summarize(by_thread_and_dso):
    """(runtime on application threads, runtime on the profiler's threads,
    CUPTI, all) samples of one process."""
    runtime = [0, 0]
    cupti = total = 0
    for (profiler, name), samples in by_thread_and_dso.items():
        if is_runtime(name):
            runtime[1 if profiler else 0] += samples
        if name.startswith("libcupti"):
            cupti += samples
        total += samples
    return runtime[0], runtime[1], cupti, total


def runtime_shares(per_process):
    """The runtime's share of each process's samples (application threads
    over all samples), from summarize()'s tuples; 0 for a process without
    samples. Processes of one build run at different speeds, and the
    runtime's samples follow the process's: the share leaves that out."""
    return [counts[0] / counts[3] if counts[3] else 0.0 for counts in per_process]


# Processes without DeepContext (--reference): none, or a workload floor.
REFERENCES = ("plain", "floor", "floor-ids", "cupti-records", "cupti", "floor+cupti",
              "floor+records", "none")


def workload_command(column, args, output):
    """The command line of one process. `column` is a build (the workload
    under its `deepcontext run`) or, for a --reference, ("reference", name)."""
    workload = [args.python, WORKLOAD, "--model", args.model, "--steps", str(args.steps),
                "--device", args.device]
    if isinstance(column, tuple):
        name = column[1]
        return workload + ([] if name == "plain" else ["--floor", name])
    command = [os.path.join(column, "bin", "deepcontext"), "run"]
    if args.native:
        command.append("--native")
    return command + ["-o", output, "--"] + workload


def column_name(column):
    return column[1] if isinstance(column, tuple) else column


def run_one(perf, column, args, workdir, label):
    """One process under perf: (step ms or None, by_dso, the runtime's
    symbols, every symbol on the application's threads)."""
    control = os.path.join(workdir, label + ".ctl")
    ack = os.path.join(workdir, label + ".ack")
    for fifo in (control, ack):
        if os.path.exists(fifo):
            os.unlink(fifo)
        os.mkfifo(fifo)
    data = os.path.join(workdir, label + ".perf")
    command = workload_command(column, args, os.path.join(workdir, label + ".dctx"))
    record = perf + ["record", "-q", "-e", "cpu-clock", "-F", str(args.frequency), "-D", "-1",
                     "--control", "fifo:%s,%s" % (control, ack), "-o", data, "--"]
    # The floors load their libraries through the first build's package.
    build = args.build if isinstance(column, tuple) else column
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(build), "python"),
               PERF_CTL_FIFO=control, PERF_ACK_FIFO=ack)
    result = subprocess.run(record + command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, check=False)
    if result.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (label, result.stdout[-3000:]))
    found = STEP.findall(result.stdout)
    report = lambda sort: subprocess.run(
        perf + ["report", "-i", data, "--stdio", "-n", "-t", "\t", "--sort", sort],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout
    by_thread_and_dso = samples_by_thread_and_dso(report("comm,dso"))
    by_symbol = report("comm,dso,sym")
    symbols = runtime_symbols(by_symbol)
    os.unlink(data)
    return ((float(found[-1]) if found else None), by_thread_and_dso, symbols,
            application_symbols(by_symbol))


def ranked_objects(libraries, count):
    """The `count` objects with the most samples in any column, most first
    (an object DeepContext slows down, or one only a reference spends in,
    shows whichever column it is busiest in)."""
    busiest = {}
    for per_object in libraries:
        for name, samples in per_object.items():
            busiest[name] = max(busiest.get(name, 0), samples)
    return [name for name, _ in sorted(busiest.items(), key=lambda item: (-item[1], item[0]))][
        :count]


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
    parser.add_argument("--libraries", type=int, default=10,
                        help="objects listed by their samples on the application's threads")
    parser.add_argument("--reference", action="append", default=[], choices=REFERENCES,
                        help="a process per round without DeepContext (plain) or under a "
                             "workload floor")
    parser.add_argument("--grown", type=int, default=30,
                        help="with --reference: functions listed by how much they grew")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    perf = shlex.split(args.perf)
    if shutil.which(perf[0]) is None and not os.path.exists(perf[0]):
        parser.error("perf not found: %s (see --perf)" % args.perf)
    builds = [args.build] + args.baseline
    columns = builds + [("reference", name) for name in args.reference]
    workdir = tempfile.mkdtemp(prefix="dc-samples-")

    print("| round | build | median step ms | runtime samples, application threads "
          "| runtime samples, profiler threads | CUPTI samples | all samples |")
    print("|---|---|---|---|---|---|---|")
    # By position: the same build may be given twice (to see the scatter).
    per_build = [[] for _ in columns]
    functions = [{} for _ in columns]
    libraries = [{} for _ in columns]
    all_functions = [{} for _ in columns]
    for round_index in range(1, args.rounds + 1):
        for number, column in enumerate(columns):
            label = "r%d-b%d" % (round_index, number)
            step, by_thread_and_dso, symbols, every_symbol = run_one(
                perf, column, args, workdir, label)
            for key, samples in every_symbol.items():
                all_functions[number][key] = all_functions[number].get(key, 0) + samples
            counts = summarize(by_thread_and_dso)
            per_build[number].append(counts)
            for name, samples in application_libraries(by_thread_and_dso).items():
                libraries[number][name] = libraries[number].get(name, 0) + samples
            for name, (application, profiler) in symbols.items():
                sums = functions[number].setdefault(name, [0, 0])
                sums[0] += application
                sums[1] += profiler
            print("| %d | %s | %s | %d | %d | %d | %d |" % (
                (round_index, column_name(column), "%.2f" % step if step else "n/a") + counts),
                flush=True)

    print()
    print("| build | runtime samples, application threads, mean | against %s "
          "| profiler threads, mean | CUPTI, mean | all, mean "
          "| runtime's share of all samples, mean (rounds) | against %s |"
          % (builds[0], builds[0]))
    print("|---|---|---|---|---|---|---|---|")
    mean = lambda values: sum(values) / len(values)
    mean_of = lambda number, index: mean([counts[index] for counts in per_build[number]])
    first = mean_of(0, 0)
    first_share = mean(runtime_shares(per_build[0]))
    for number, build in enumerate(map(column_name, columns)):
        shares = runtime_shares(per_build[number])
        print("| %s | %.0f | %.3f | %.0f | %.0f | %.0f | %.2f %% (%s) | %.3f |" % (
            build, mean_of(number, 0), mean_of(number, 0) / first if first else float("nan"),
            mean_of(number, 1), mean_of(number, 2), mean_of(number, 3),
            100 * mean(shares), ", ".join("%.2f" % (100 * share) for share in shares),
            mean(shares) / first_share if first_share else float("nan")))
    print()
    print("Objects on the application's threads, mean samples per round:")
    print("| object | " + " | ".join(map(column_name, columns)) + " |")
    print("|---|" + "---|" * len(columns))
    for name in ranked_objects(libraries, args.libraries):
        print("| %s | %s |" % (name, " | ".join(
            "%.0f" % (libraries[number].get(name, 0) / args.rounds)
            for number in range(len(columns)))))
    if args.reference:
        # What the first build's processes spend more than the last
        # reference's, function by function: its own code, and the code of
        # torch, Python or the driver it slows down.
        print()
        print("Functions with the most samples more under %s than under %s (application's "
              "threads, mean per round):" % (builds[0], args.reference[-1]))
        print("| object | function | %s | %s | more |" % (args.reference[-1], builds[0]))
        print("|---|---|---|---|---|")
        for obj, function, before, after in grown_functions(
                all_functions[0], all_functions[-1], args.grown):
            print("| %s | %s | %.0f | %.0f | %+.0f |" % (
                obj, function[:100], before / args.rounds, after / args.rounds,
                (after - before) / args.rounds))
    if len(builds) > 1:
        # A change to the runtime shows in the functions it touches, also
        # those of other objects it calls (the interpreter, libc, torch).
        print()
        print("Functions whose samples differ most between %s and %s (application's "
              "threads, mean per round):" % (builds[0], builds[1]))
        print("| object | function | %s | %s | difference |" % (builds[0], builds[1]))
        print("|---|---|---|---|---|")
        for obj, function, first, second in changed_functions(
                all_functions[0], all_functions[1], args.grown):
            print("| %s | %s | %.0f | %.0f | %+.0f |" % (
                obj, function[:100], first / args.rounds, second / args.rounds,
                (first - second) / args.rounds))
    for number, build in enumerate(builds):
        print()
        print("%s: the runtime's functions, samples over %d rounds on application threads "
              "(and on the profiler's threads)" % (build, args.rounds))
        ranked = sorted(functions[number].items(), key=lambda item: (-item[1][0], -item[1][1]))
        for name, (application, profiler) in ranked[:args.top]:
            print("%8d %8s  %s" % (application, "(%d)" % profiler if profiler else "", name))
        print()
        print("%s: on the profiler's threads" % build)
        ranked = sorted(((name, counts[1]) for name, counts in functions[number].items()
                         if counts[1] > 0), key=lambda item: -item[1])
        for name, profiler in ranked[:args.top]:
            print("%8d  %s" % (profiler, name))
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
