"""GPU overhead and accuracy of DeepContext on three models (run on a GPU machine).

For each model (ResNet-50, GPT-2 size transformer, launch-bound MLP), in one
invocation, interleaved: step time without a profiler, under
`deepcontext run` (sampled CPU time, the default; also with --no-cpu-time and
--exact-cpu-time), and under
torch.profiler(with_stack=True); the ratios;
profile size for N vs 10N steps; and per-op kernel time and kernel counts of
the top-20 ops compared with torch.profiler's own numbers for the same steps.

    python3 bench/gpu_overhead.py --build build [--models resnet50,gpt2,mlp]

--table prints one table for every workload (ResNet-50, GPT-2, the MLP, and
100k tiny kernels launched through torch and through a Triton kernel) and
every profiler (bench/overhead_table.py; deepcontext run, --native, --trace-fraction 0.1,
torch.profiler with_stack, Proton with context="python"): ratios to no
profiler, the RSS the profiler adds (peak RSS of the process tree) and mean
against median step (first-time pauses). One process per cell. A floor
column times the RecordFunction and CUPTI interfaces alone, with callbacks
that do nothing (lib/libdc_cupti_floor.so), and the notes give DeepContext's
columns less that floor.

    python3 bench/gpu_overhead.py --build build --table [--quick] [--steps 30 --repeats 2]
        [--blocks 3] [--cell-timeout 240] [--budget SECONDS]

Each cell process times --blocks blocks of --steps steps (the cell: the
median of the blocks' medians), so repeats mostly cost steps, not process
start-up; --cell-timeout kills a hung process (its cell reads n/a) and
--budget drops a workload's later processes where they would leave the
workloads after it no time, so one call under an outer time limit prints
every row.

--in-process ROUNDS instead alternates plain steps and deepcontext.profile()
regions in one process per model (gpu_models.py --ab-rounds): no process
start-up or machine drift between the two, so the ratio is steadier on a
shared machine; it prints the plain steps before the first region too,
and ends with the ratios taken round by round (round_pairs.py): each
region's block against the plain block of its own round, as the median
over the rounds with the first and third quartiles (bench/in_process.py).
--processes N runs N such processes per model and adds the median over
them of each one's round-by-round median, with the lowest and highest.

    python3 bench/gpu_overhead.py --build build --in-process 16 --processes 4
        --models mlp --variants floor+cupti,sampled,native,native-no-trails

--keep-runs DIR also writes each such process's results to DIR, and
--from-runs DIR [DIR ...] prints the tables of every run kept there, as one
call with all those processes would (bench/kept_runs.py): several calls,
each under a time limit, add up to one summary.

    python3 bench/gpu_overhead.py --from-runs runs/ [--models mlp]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_process import run, step_ms  # noqa: E402
from overhead_table import WORKLOAD, table  # noqa: E402
from in_process import from_kept_runs, in_process  # noqa: E402


def machine_line():
    """The clock source and what reading the clock costs: the profiler reads
    it at every op boundary, and a virtual machine whose kernel fell back
    from the TSC to a paravirtual clock makes each read a system call,
    which shows in every ratio below. Printed so that runs on different
    machine instances can be told apart."""
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            source = f.read().strip()
    except OSError:
        source = "unknown"
    reads = 200000
    start = time.perf_counter_ns()
    for _ in range(reads):
        time.monotonic_ns()
    per_read = (time.perf_counter_ns() - start) / reads
    cpus = sorted(os.sched_getaffinity(0))
    return ("clock source %s; time.monotonic_ns() from Python: %.0f ns per read; "
            "processes run on %d CPUs (%s)" % (source, per_read, len(cpus), cpu_text(cpus)))


def cpu_list(text):
    """argparse type: a set of CPUs written as taskset -c writes them
    ("0-7,12")."""
    cpus = set()
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            low = int(first)
            high = int(last) if dash else low
        except ValueError:
            raise argparse.ArgumentTypeError("not a CPU list: %r (e.g. 0-7,12)" % text)
        if low < 0 or high < low:
            raise argparse.ArgumentTypeError("not a CPU range: %r" % part)
        cpus.update(range(low, high + 1))
    return cpus


def cpu_text(cpus):
    """A sorted list of CPUs as ranges ("0-7,12")."""
    ranges = []
    for cpu in cpus:
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in ranges)


def per_op_from_profile(cli, path):
    """{op name: (device time us, activity count)} with each kernel, memset and
    copy charged to its nearest operator ancestor — what torch.profiler calls
    self device time (its per-op "kernels" include memsets and copies)."""
    tree = json.loads(run([cli, "export", "--format", "json", path]))
    nodes = tree["nodes"]
    out = {}
    for node in nodes:
        if node["kind"] not in ("gpu_kernel", "gpu_memset", "gpu_memcpy"):
            continue
        stats = node.get("exclusive", {}).get("gpu_time")
        if not stats:
            continue
        parent = node["parent"]
        while parent is not None and nodes[parent]["kind"] != "operator":
            parent = nodes[parent]["parent"]
        name = nodes[parent]["name"] if parent is not None else "<no op>"
        time_us, count = out.get(name, (0.0, 0))
        out[name] = (time_us + stats["sum"] / 1000.0, count + stats["count"])
    return out


def totals(cli, path):
    """(framework op calls, kernel launches) recorded in a profile."""
    tree = json.loads(run([cli, "export", "--format", "json", path]))
    ops = kernels = 0
    for node in tree["nodes"]:
        stats = node.get("exclusive", {})
        if node["kind"] == "operator" and "calls" in stats:
            ops += stats["calls"]["sum"]
        if node["kind"] == "gpu_kernel" and "gpu_time" in stats:
            kernels += stats["gpu_time"]["count"]
    return ops, kernels


# --table: the overhead table of every profiler on every workload.
# Shortest first: a run cut short by a time limit loses the longest rows.
def non_negative(text):
    """argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more, not %d" % value)
    return value


def positive(text):
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more, not %d" % value)
    return value


def fine_grained_rows(cli, base, profile, work, model):
    """Rows of --fine-grained: instruction sampling by deepcontext and by
    Proton, and CPU counters. A row whose run fails reports NaN."""
    def measured(command):
        def measure():
            try:
                return step_ms(run(command))
            except RuntimeError as error:
                print("(%s)" % str(error).splitlines()[0], file=sys.stderr)
                return float("nan")
        return measure
    rows = {
        "deepcontext run --gpu-samples": measured(
            [cli, "run", "-q", "--gpu-samples", "-o", profile + ".samples", "--"] + base),
        "deepcontext run --gpu-metrics": measured(
            [cli, "run", "-q", "--gpu-metrics", "-o", profile + ".metrics", "--"] + base),
        "deepcontext run --gpu-metrics (every launch)": measured(
            [cli, "run", "-q", "--gpu-metrics", "--gpu-metrics-kernels", "1000000", "-o",
             profile + ".metrics-all", "--"] + base),
        "deepcontext run --cpu-counters": measured(
            [cli, "run", "-q", "--cpu-counters", "-o", profile + ".counters", "--"] + base),
    }
    # Proton's instruction sampling (triton.profiler.start(backend="cupti",
    # mode="pcsampling")) over the timed steps.
    rows["proton mode=pcsampling"] = measured(
        base + ["--proton", os.path.join(work, model + ".proton"), "--proton-mode", "pcsampling"])
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", default="build")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--models", default=None,
                        help="comma-separated (default resnet50,gpt2,mlp; --table: those and "
                             "launch-torch,launch-triton)")
    parser.add_argument("--steps", type=int, default=None,
                        help="timed steps per run (default 20; --table: 30)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="runs per cell (default 3; --table: 2)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time deepcontext without GPU tracing and torch.profiler "
                             "with CPU or CUDA activities only, to split the overhead")
    parser.add_argument("--fine-grained", action="store_true",
                        help="also time deepcontext run --gpu-samples, --gpu-metrics (default "
                             "bound and every launch) and --cpu-counters, and Proton's "
                             "instruction sampling (mode=pcsampling)")
    parser.add_argument("--timing-only", action="store_true",
                        help="skip the profile-size and accuracy parts")
    parser.add_argument("--in-process", type=int, metavar="ROUNDS", default=0,
                        help="instead: alternate plain steps and deepcontext.profile() "
                             "regions ROUNDS times in one process per model")
    parser.add_argument("--processes", type=positive, default=1,
                        help="with --in-process: processes per model, one after the other; "
                             "with more than one, a last table gives the median over "
                             "processes of each one's round-by-round median, lowest and "
                             "highest")
    parser.add_argument("--variants", default="sampled,off,gpu-off",
                        help="with --in-process: the regions of each round, comma-separated: "
                             "sampled, exact, off (cpu_time), gpu-off (no CUPTI) and "
                             "sampled-10ms (CPU sampled every 10 ms), windows-10, windows-25, windows-min and "
                             "windows-min-gpu-off "
                             "(trace windows covering 10 %%, 25 %% or 0.1 %% of each region; use "
                             "--steps so that a region spans many windows), native and native-gpu-off "
                             "(sampled and gpu-off with native frames), native-no-trails (native "
                             "with every op entry and GPU call inside an op unwound), floor (a "
                             "RecordFunction "
                             "callback that does nothing: torch's own cost of observing ops), "
                             "floor-ids (the same asking for RecordFunction's ids), "
                             "cupti-records, cupti (CUPTI tracing every kernel without or with "
                             "empty callbacks), floor+cupti (both floors), floor+records "
                             "(floor and cupti-records) and none (a region without any "
                             "profiler: the control for the plain steps' drift); proton and "
                             "torch-profiler (other profilers' regions, compared with "
                             "DeepContext's in the same process)")
    parser.add_argument("--keep-runs", metavar="DIR",
                        help="with --in-process: also write each process's results to DIR "
                             "(MODEL-N.json, numbered on from what DIR holds), for "
                             "--from-runs")
    parser.add_argument("--from-runs", metavar="DIR", nargs="+",
                        help="instead: print the --in-process tables of the runs kept in "
                             "these folders by --keep-runs (of --models where given), "
                             "starting no process")
    parser.add_argument("--settle-steps", type=non_negative, default=3,
                        help="with --in-process: first steps of each block reported as "
                             "its start rather than its steady state")
    parser.add_argument("--device", default="cuda",
                        help="with --in-process: cpu tries the script without a GPU")
    parser.add_argument("--table", action="store_true",
                        help="instead: the overhead table (every profiler on ResNet-50, GPT-2, "
                             "the MLP and the torch / Triton launch microbenchmarks)")
    parser.add_argument("--quick", action="store_true",
                        help="with --table: 20 steps after 3 warm-up, one run per cell "
                             "(30 processes of about 11 s each on an H200: about 6 minutes)")
    parser.add_argument("--columns", default="",
                        help="with --table: only these profilers, comma-separated (column "
                             "titles or their start: 'deepcontext run,run --native,Proton'); "
                             "no profiler always runs")
    parser.add_argument("--warmup", type=int, default=5, help="with --table: warm-up steps")
    parser.add_argument("--blocks", type=int, default=None,
                        help="with --table: blocks of --steps timed steps per process, each "
                             "cell the median of the blocks' medians (default 3; --quick: 1)")
    parser.add_argument("--cell-timeout", type=float, default=240,
                        help="with --table: seconds one process may run before it is killed "
                             "and its cell reported n/a")
    parser.add_argument("--budget", type=float, default=0,
                        help="with --table: seconds for the whole table; later processes of a "
                             "workload are skipped where they would leave the workloads after "
                             "it less than one round (0: no limit)")
    parser.add_argument("--launches", type=int, default=5000,
                        help="with --table: tiny kernels per step of the launch-* workloads")
    parser.add_argument("--cpus", type=cpu_list, default=None,
                        help="run every workload process on these CPUs only (e.g. 0-7), "
                             "to keep where the scheduler puts a process's threads out of "
                             "the scatter between processes")
    args = parser.parse_args()
    if args.processes > 1 and args.in_process == 0:
        parser.error("--processes needs --in-process")
    if args.keep_runs and args.in_process == 0:
        parser.error("--keep-runs needs --in-process")
    if args.from_runs:
        if args.in_process or args.table:
            parser.error("--from-runs starts no process: not with --in-process or --table")
        return from_kept_runs(args.from_runs, args.models.split(",") if args.models else None)
    if args.cpus is not None:
        try:
            os.sched_setaffinity(0, args.cpus)  # inherited by every process started
        except OSError as error:
            raise SystemExit("--cpus %s: %s" % (cpu_text(sorted(args.cpus)), error))
    machine = machine_line()
    print(machine)
    if args.table:
        if args.quick:
            args.steps, args.warmup, args.repeats = 20, 3, 1
            args.blocks = args.blocks or 1
        args.blocks = args.blocks or 3
        args.steps = args.steps or 30
        args.repeats = args.repeats or 2
        return table(args)
    args.steps = args.steps or 20
    args.repeats = args.repeats or 3
    args.models = args.models or "resnet50,gpt2,mlp"
    if args.in_process > 0:
        return in_process(args, machine)
    with tempfile.TemporaryDirectory(prefix="dc-gpu-bench-") as work:
        return separate_processes(args, work)


def separate_processes(args, work):
    """Each model in processes of its own: timing, per-op accuracy against
    torch.profiler, profile sizes; profiles go into `work`."""
    cli = os.path.join(args.build, "bin", "deepcontext")
    for model in args.models.split(","):
        base = [args.python, WORKLOAD, "--model", model, "--steps", str(args.steps)]
        plain, ours, ours_wall, ours_exact, theirs = [], [], [], [], []
        profile = os.path.join(work, model + ".dctx")
        torch_json = os.path.join(work, model + ".torch.json")
        extra = {}
        if args.breakdown:
            no_gpu = dict(os.environ, DEEPCONTEXT_GPU="0")
            scratch = os.path.join(work, model + ".scratch.json")
            extra = {
                "deepcontext run, GPU tracing off": lambda: step_ms(run(
                    [cli, "run", "-q", "-o", profile, "--"] + base, env=no_gpu)),
                "deepcontext run --no-gpu-memory": lambda: step_ms(run(
                    [cli, "run", "-q", "--no-gpu-memory", "-o", profile, "--"] + base)),
                "deepcontext run --no-cpu-time --no-gpu-memory": lambda: step_ms(run(
                    [cli, "run", "-q", "--no-cpu-time", "--no-gpu-memory", "-o", profile, "--"]
                    + base)),
                "torch.profiler, CPU activity only (with_stack)": lambda: step_ms(run(
                    base + ["--torch-profiler", scratch, "--torch-profiler-activities", "cpu"])),
                "torch.profiler, CUDA activity only": lambda: step_ms(run(
                    base + ["--torch-profiler", scratch, "--torch-profiler-activities", "cuda"])),
            }
        if args.fine_grained:
            extra.update(fine_grained_rows(cli, base, profile, work, model))
        extra_times = {name: [] for name in extra}
        for _ in range(args.repeats):
            plain.append(step_ms(run(base)))
            ours.append(step_ms(run([cli, "run", "-q", "-o", profile, "--"] + base)))
            ours_wall.append(step_ms(run([cli, "run", "-q", "--no-cpu-time", "-o",
                                          profile + ".wall", "--"] + base)))
            ours_exact.append(step_ms(run([cli, "run", "-q", "--exact-cpu-time", "-o",
                                           profile + ".exact", "--"] + base)))
            theirs.append(step_ms(run(base + ["--torch-profiler", torch_json])))
            for name, measure in extra.items():
                extra_times[name].append(measure())
        p, o, t = (statistics.median(x) for x in (plain, ours, theirs))
        print("\n## %s" % model)
        print("| profiler | step (ms) | ratio |")
        print("|---|---|---|")
        print("| none | %.2f | 1.000x |" % p)
        print("| deepcontext run | %.2f | %.3fx |" % (o, o / p))
        w = statistics.median(ours_wall)
        print("| deepcontext run --no-cpu-time | %.2f | %.3fx |" % (w, w / p))
        m = statistics.median(ours_exact)
        print("| deepcontext run --exact-cpu-time | %.2f | %.3fx |" % (m, m / p))
        print("| torch.profiler(with_stack=True) | %.2f | %.3fx |" % (t, t / p))
        for name, times in extra_times.items():
            m = statistics.median(times)
            print("| %s | %.2f | %.3fx |" % (name, m, m / p))
        if args.timing_only:
            continue

        sizes = {}
        for steps in (args.steps, 10 * args.steps):
            path = os.path.join(work, "%s_%d.dctx" % (model, steps))
            run([cli, "run", "-q", "-o", path, "--", args.python, WORKLOAD, "--model", model,
                 "--steps", str(steps), "--warmup", "5"])
            sizes[steps] = os.path.getsize(path)
        print("profile size: %d steps %d B, %d steps %d B" % (
            args.steps, sizes[args.steps], 10 * args.steps, sizes[10 * args.steps]))
        # Per-step counts from the difference of the two runs (warm-up and
        # start-up cancel out), and what the overhead costs per op.
        counts = {steps: totals(cli, os.path.join(work, "%s_%d.dctx" % (model, steps)))
                  for steps in sizes}
        extra_steps = 9 * args.steps
        ops = (counts[10 * args.steps][0] - counts[args.steps][0]) / extra_steps
        kernels = (counts[10 * args.steps][1] - counts[args.steps][1]) / extra_steps
        print("per step: %.0f framework ops, %.0f kernels; deepcontext costs %.2f us per op"
              % (ops, kernels, 1000 * (o - p) / ops if ops else 0.0))

        # Accuracy: both profilers cover exactly the timed steps of a run.
        region = os.path.join(work, model + ".region.dctx")
        env = dict(os.environ, PYTHONPATH=os.path.join(args.build, "python"))
        result = subprocess.run(base + ["--deepcontext-region", region], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if result.returncode != 0:
            raise RuntimeError(result.stderr.decode()[-3000:])
        ours_ops = per_op_from_profile(cli, region)
        with open(torch_json) as f:
            reference = json.load(f)
        total_steps = args.steps
        # Framework operators only: torch.profiler also lists its own
        # bookkeeping ("Activity Buffer Request") and runtime calls.
        ops = {k: v for k, v in reference["per_op"].items() if "::" in k}
        top = sorted(ops.items(),
                     key=lambda kv: -kv[1]["self_device_time_us"])[:20]
        print("| op | torch us/step | deepcontext us/step | diff | torch kernels/step | ours |")
        print("|---|---|---|---|---|---|")
        worst = 0.0
        for name, ref in top:
            ref_time = ref["self_device_time_us"] / reference["steps"]
            ref_kernels = ref["kernels"] / reference["steps"]
            time_us, count = ours_ops.get(name, (0.0, 0))
            mine, my_kernels = time_us / total_steps, count / total_steps
            diff = (mine - ref_time) / ref_time if ref_time else 0.0
            worst = max(worst, abs(diff))
            print("| %s | %.1f | %.1f | %+.2f%% | %.2f | %.2f |" % (
                name, ref_time, mine, 100 * diff, ref_kernels, my_kernels))
        print("largest per-op difference: %.2f%%" % (100 * worst))


if __name__ == "__main__":
    main()
