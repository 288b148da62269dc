"""Instructions and cache misses of the runtime's per-op path inside a real
torch training step, counted by valgrind's callgrind: numbers that do not
drift with the machine's load, for changes too small for a timed run.

    python3 bench/op_path_callgrind.py [--build build] [--baseline BUILD]
                                       [--steps 4] [--plain] [--native]
    python3 bench/op_path_callgrind.py --around [--build build]
                                       [--steps 4] [--more-steps 10]
                                       [--source FILE ...]

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

--functions N then lists, per build, the runtime's N functions with the
most instructions per op and their misses: where an op's lines go. Those
counts include start-up and the profiler's own threads; with --around,
the functions' cost per op of the extra steps leaves start-up out.

--native profiles with native frames (`deepcontext run --native`), so that
the per-op cost of unwinding and splicing native stacks is counted too;
with --around it applies to the profiled runs.

--source FILE (with --around; repeatable) lists what each line of FILE,
a path in this repository such as runtime/profiler/op_metrics.cc, cost
per op of the extra steps under deepcontext run: instructions and L1
misses per source line, code inlined from FILE counted where FILE holds
it. Where a function's cost goes, line by line, without start-up.

--lines N (not with --around) has callgrind count each instruction
(--dump-instr=yes) and lists, per build, the N functions of
libdeepcontext.so with the most instruction-cache misses: their calls, the
64-byte lines of their code they ran on, the lines one call touches on
average and its misses (bench/callgrind_lines.py). A function that touches
more lines per call than its hot code needs carries rarely run code among
it; where that code moves out (cold paths), the lines per call fall.

Each build runs in its own process, all of them at once (one core each);
startup (importing torch under valgrind) takes minutes. Needs valgrind and
torch (Debian's python3-torch). Where the CPU hides RDTSCP from CPUID (some
virtual machines), the runs load the build's bench/rdtscp_audit.cc module,
without which valgrind stops at the RDTSCP in libhwy, which torch loads.

--around asks what the runtime's footprint costs the code around it: the
same workload runs under the RecordFunction floor (a callback that does
nothing, bench/workloads/record_function_floor.cc) and under `deepcontext
run`, each for --steps and for --steps + --more-steps, and the difference
between the two lengths leaves the cost of the extra steps alone (no
import, no start-up). Per op of those steps it prints instructions and
L1 misses under each: of the runtime (under the floor, the floor's own
callback), of the busiest other objects and of all of them together.
What the other objects miss more under DeepContext are lines of their
code and data that the runtime's own evicted between two ops.

In every run the sampler ticks every 50 ms (DEEPCONTEXT_CPU_SAMPLE_US):
valgrind runs a step about 50 times slower, and callgrind's single
simulated cache would charge a 1 ms sampler's work to the ops.
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import callgrind_lines
from cpu_overhead import total_calls

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORKLOAD = os.path.join(HERE, "workloads", "gpu_models.py")
EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")
# The events the tables show, and the columns callgrind_annotate gives per
# source line (--source).
SHOWN = ("Ir", "I1mr", "D1mr", "D1mw")
NUMBER = re.compile(r"[\d,]+|\.")
PERCENT = re.compile(r"\(\s*[\d.]+%\)")


def leading_costs(line, count):
    """The first `count` cost columns of a callgrind_annotate line ("." is
    0, percentages dropped) and what follows them, or ([...fewer], rest)
    where the line has fewer."""
    tokens = PERCENT.sub("", line).split(None, count)
    values = []
    while tokens and len(values) < count and NUMBER.fullmatch(tokens[0]):
        token = tokens.pop(0)
        values.append(0 if token == "." else int(token.replace(",", "")))
    return values, tokens[0] if tokens else ""


def function_costs(annotated):
    """callgrind_annotate's per-function lines as (function, object, costs),
    costs indexed like EVENTS, '.' read as 0. The object is the file each
    line names in brackets at its end. Code inlined from a header is listed
    as header:function without an object: it is charged to the object of
    the same function's own line, or to "?". Call lines ("=> callee") and
    annotated source lines repeat costs already counted in a function's
    line: run callgrind_annotate with --auto=no, and they are skipped here
    too."""
    placed = []
    object_of = {}
    unplaced = []
    for line in annotated.splitlines():
        if "=>" in line:
            continue
        values, rest = leading_costs(line, len(EVENTS))
        if len(values) < len(EVENTS) or not rest or "PROGRAM TOTALS" in line:
            continue
        text = rest.strip()
        found = re.search(r"\s*\[([^\[\]]*)\]$", text)
        function = (text[:found.start()] if found else text).split(":", 1)[-1]
        if found:
            name = os.path.basename(found.group(1))
            object_of.setdefault(function, name)
            placed.append((function, name, values))
        else:
            unplaced.append((function, values))
    return placed + [(function, object_of.get(function, "?"), values)
                     for function, values in unplaced]


def _summed(rows, key):
    totals = {}
    for row in rows:
        sums = totals.setdefault(key(row), [0] * len(EVENTS))
        for i, value in enumerate(row[2]):
            sums[i] += value
    return totals


def object_totals(annotated):
    """The costs of function_costs summed by object file."""
    return _summed(function_costs(annotated), key=lambda row: row[1])


def runtime_function_totals(annotated):
    """The costs of the runtime's functions (is_runtime objects), summed by
    function: its lines inlined from headers join the function's own."""
    return _summed([row for row in function_costs(annotated) if is_runtime(row[1])],
                   key=lambda row: row[0])


def is_runtime(name):
    # The torch adapter is compiled per torch version into the adapter
    # cache as torch-<version>-abi<n>-<hash>.so.
    return name.startswith("libdeepcontext.so") or re.fullmatch(
        r"torch-.*-abi\d+-[0-9a-f]+\.so", name) is not None


def source_line_costs(annotated, source):
    """{line number: (costs indexed like SHOWN, text)} of the file
    whose path ends with `source`, from callgrind_annotate --auto=yes
    --show=Ir,I1mr,D1mr,D1mw. A line inlined in several functions carries
    their sum. The annotation shows stretches of the file around lines
    that cost something: "-- line N" starts one at line N (the first
    starts at line 1 without it), and a call line ("=> callee") repeats
    its callee's cost under the line that made the call."""
    costs = {}
    inside = headed = False
    number = None
    for line in annotated.splitlines():
        if line.startswith("-- Auto-annotated source:"):
            path = line.split(":", 1)[1].strip()
            inside = path == source or path.endswith("/" + source)
            headed = False
            number = None
            continue
        if not inside:
            continue
        stretch = re.match(r"-- line (\d+) -", line)
        if stretch:
            number = int(stretch.group(1))
            continue
        if number is None:
            # The columns' names and an empty line end the section's
            # heading (after any warning that the file changed since).
            if line.split() == list(SHOWN):
                headed = True
            elif headed and not line.strip():
                number = 1
            continue
        if line.startswith("-----"):
            inside = False
            continue
        values, text = leading_costs(line, len(SHOWN))
        text = text.strip()
        if len(values) == len(SHOWN):
            if text.startswith("=> "):
                continue
            costs[number] = (values, text)
        number += 1
    return costs


def source_table(short, long, ops, least=0.5):
    """Rows of what each line cost per op of the extra steps (the longer
    run's costs less the shorter one's, over `ops`), for lines of `least`
    instructions or `least` / 10 misses per op or more, with their sum."""
    extra = per_op_of_extra_steps({number: values for number, (values, _) in short.items()},
                                  {number: values for number, (values, _) in long.items()},
                                  ops, len(SHOWN))
    kept = []
    total = [0.0] * len(SHOWN)
    for number in sorted(extra):
        per_op = extra[number]
        text = long.get(number, ([], ""))[1]
        if abs(per_op[0]) < least and all(abs(v) < least / 10 for v in per_op[1:]):
            continue
        total = [total[i] + per_op[i] for i in range(len(SHOWN))]
        kept.append("| %d | %s | `%s` |" % (number, " | ".join("%.2f" % v for v in per_op),
                                           text.replace("|", "\\|")[:100]))
    rows = ["| line | " + " | ".join(SHOWN) + " | source |",
            "|---|" + "---|" * len(SHOWN) + "---|"]
    rows += kept
    rows.append("| lines shown | %s | |" % " | ".join("%.2f" % v for v in total))
    return "\n".join(rows)


def annotate_sources(callgrind_file):
    """callgrind_annotate's line-by-line annotation of the sources of a
    run, as source_line_costs reads it."""
    return subprocess.run(["callgrind_annotate", "--auto=yes", "--threshold=100",
                           "--show=" + ",".join(SHOWN), "--include=" + ROOT,
                           callgrind_file],
                          stdout=subprocess.PIPE, text=True, check=True).stdout


def cpu_advertises_rdtscp(cpuinfo="/proc/cpuinfo"):
    """Whether CPUID says the processor has RDTSCP (the "flags" of
    /proc/cpuinfo); True where that cannot be read."""
    try:
        with open(cpuinfo) as f:
            flags = [line for line in f if line.startswith("flags")]
    except OSError:
        return True
    return not flags or "rdtscp" in flags[0].split()


def valgrind_env(build, env, cpuinfo="/proc/cpuinfo"):
    """`env` for a run under valgrind. Where CPUID hides RDTSCP, valgrind
    stops at the first one, and Debian's torch loads libhwy, whose
    initializer executes one: the build's rtld-audit module
    (bench/rdtscp_audit.cc) then rewrites them as libhwy is loaded."""
    audit = os.path.join(os.path.abspath(build), "lib", "libdc_rdtscp_audit.so")
    if cpu_advertises_rdtscp(cpuinfo) or not os.path.exists(audit):
        return env
    env = dict(env)
    env["LD_AUDIT"] = ":".join(filter(None, [env.get("LD_AUDIT"), audit]))
    return env


def workload_command(build, steps, kind, profile, python, native=False):
    """The MLP's command line for one run: kind is "profiled" (deepcontext
    run, with --native when `native`), "plain" or "floor"."""
    command = [python, WORKLOAD, "--model", "mlp", "--device", "cpu",
               "--steps", str(steps), "--warmup", "1"]
    if kind == "floor":
        return command + ["--floor", "floor"]
    if kind == "profiled":
        run = [os.path.join(build, "bin", "deepcontext"), "run", "-o", profile]
        return run + (["--native"] if native else []) + ["--"] + command
    return command


# One callgrind run of the workload: its label, totals by object, the
# profile's calls (None unless profiled), the runtime's totals by function,
# callgrind_lines.line_rows of libdeepcontext.so (a profiled run with
# `lines`, else None) and the workload's callgrind file.
Run = collections.namedtuple(
    "Run", "label totals calls functions line_rows callgrind_file")


def run_one(build, steps, kind, workdir, python, native=False, lines=False):
    """Runs the MLP under callgrind; kind is "profiled" (deepcontext run),
    "plain" or "floor". Returns a Run."""
    lines = lines and kind == "profiled"
    label = os.path.basename(os.path.normpath(build)) + (
        "" if kind == "profiled" else "-" + kind)
    out = tempfile.mkdtemp(prefix="%s-%d-" % (label, steps), dir=workdir)
    profile = os.path.join(out, "mlp.dctx")
    command = workload_command(build, steps, kind, profile, python, native)
    env = valgrind_env(build, dict(os.environ, PYTHONPATH=os.path.join(
        os.path.abspath(build), "python"), DEEPCONTEXT_CPU_SAMPLE_US="50000"))
    valgrind = ["valgrind", "--tool=callgrind", "--trace-children=yes", "--cache-sim=yes",
                "--callgrind-out-file=" + os.path.join(out, "callgrind.%p")]
    if lines:  # costs per instruction
        valgrind.append("--dump-instr=yes")
    result = subprocess.run(valgrind + command, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, check=False)
    if result.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (label, result.stderr[-3000:]))
    # The launcher and the workload each leave a file: the workload's is
    # the larger one.
    files = [os.path.join(out, f) for f in os.listdir(out) if f.startswith("callgrind.")]
    largest = max(files, key=os.path.getsize)
    annotated = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", largest],
                               stdout=subprocess.PIPE, text=True, check=True).stdout
    totals = object_totals(annotated)
    calls = None
    if kind == "profiled":
        calls = total_calls(os.path.join(build, "bin", "deepcontext"), profile)
    line_rows = None
    if lines:
        library = os.path.join(build, "lib", "libdeepcontext.so")
        line_rows = callgrind_lines.line_rows(
            callgrind_lines.instruction_costs(largest, "libdeepcontext.so"),
            callgrind_lines.function_starts(library))
    return Run(label, totals, calls, runtime_function_totals(annotated), line_rows, largest)


def per_op_of_extra_steps(short, long, ops, width=len(EVENTS)):
    """Per key (object, function or source line), what the longer run cost
    more than the shorter one in each of `width` events, divided by the
    ops of the extra steps."""
    return {name: [(long.get(name, [0] * width)[i] - short.get(name, [0] * width)[i]) / ops
                   for i in range(width)]
            for name in set(short) | set(long)}


def around_rows(floor, profiled, objects):
    """Rows (name, floor values, profiled values) of the --around table:
    the runtime, the `objects` other objects with the most instructions,
    and their sum; values are per op, indexed like EVENTS."""
    zero = [0.0] * len(EVENTS)

    def summed(names, per):
        return [sum(per.get(name, zero)[i] for name in names) for i in range(len(EVENTS))]

    names = set(floor) | set(profiled)
    runtime = sorted(name for name in names if is_runtime(name))
    others = sorted((name for name in names if not is_runtime(name)),
                    key=lambda name: -max(floor.get(name, zero)[0], profiled.get(name, zero)[0]))
    rows = [("runtime", summed(runtime, floor), summed(runtime, profiled))]
    rows += [(name, floor.get(name, zero), profiled.get(name, zero))
             for name in others[:objects]]
    rows.append(("all other objects", summed(others, floor), summed(others, profiled)))
    return rows


def around(args, workdir):
    jobs = [(kind, steps) for steps in (args.steps, args.steps + args.more_steps)
            for kind in ("floor", "profiled")]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(
            lambda job: run_one(args.build, job[1], job[0], workdir, args.python,
                                args.native), jobs))
    floor_short, dc_short, floor_long, dc_long = results
    ops = dc_long.calls - dc_short.calls
    if ops <= 0:
        raise RuntimeError("the longer run recorded no more calls than the shorter one")
    floor = per_op_of_extra_steps(floor_short.totals, floor_long.totals, ops)
    profiled = per_op_of_extra_steps(dc_short.totals, dc_long.totals, ops)
    print("%d ops in %d steps; per op, RecordFunction floor / deepcontext run:"
          % (ops, args.more_steps))
    print("| object | " + " | ".join(SHOWN) + " |")
    print("|---|" + "---|" * len(SHOWN))
    for name, under_floor, under_dc in around_rows(floor, profiled, args.objects):
        print("| %s | %s |" % (name, " | ".join(
            "%.1f / %.1f" % (under_floor[EVENTS.index(e)], under_dc[EVENTS.index(e)])
            for e in SHOWN)))
    if args.functions > 0:
        # Per op of the extra steps: start-up and one-time work drop out.
        extra = per_op_of_extra_steps(dc_short.functions, dc_long.functions, ops)
        print()
        print("the runtime's %d busiest functions per op of the extra steps, "
              "under deepcontext run:" % args.functions)
        print(function_table(extra, 1, args.functions))
    if args.source:
        annotated_short = annotate_sources(dc_short.callgrind_file)
        annotated_long = annotate_sources(dc_long.callgrind_file)
        for source in args.source:
            short = source_line_costs(annotated_short, source)
            long = source_line_costs(annotated_long, source)
            if not short and not long:
                print("\n%s: no line of it ran (a path under %s?)" % (source, ROOT))
                continue
            print()
            print("%s, line by line, per op of the extra steps under deepcontext run "
                  "(code inlined from it counted where it is written):" % source)
            print(source_table(short, long, ops))
    print("callgrind files under %s" % workdir)
    return 0


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
    parser.add_argument("--native", action="store_true",
                        help="profile with native frames (deepcontext run --native)")
    parser.add_argument("--around", action="store_true",
                        help="compare with the RecordFunction floor per object")
    parser.add_argument("--more-steps", type=int, default=10,
                        help="--around: the longer runs' extra steps")
    parser.add_argument("--objects", type=int, default=10,
                        help="--around: objects listed")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="--around: processes at once")
    parser.add_argument("--functions", type=int, default=0, metavar="N",
                        help="also list the runtime's N busiest functions per op, per build")
    parser.add_argument("--lines", type=int, default=0, metavar="N",
                        help="also list, per build, the N functions of libdeepcontext.so "
                             "with the most instruction-cache misses: the 64-byte lines "
                             "of their code a call runs on, and its misses "
                             "(bench/callgrind_lines.py; callgrind --dump-instr=yes)")
    parser.add_argument("--source", action="append", default=[], metavar="FILE",
                        help="--around: what each line of FILE (a path in this "
                             "repository, e.g. runtime/profiler/op_metrics.cc) cost per "
                             "op of the extra steps; repeatable")
    args = parser.parse_args()
    if args.source and not args.around:
        parser.error("--source compares the two lengths of --around")
    if args.around and args.lines > 0:
        parser.error("--lines counts one run per build: it does not go with --around")
    workdir = tempfile.mkdtemp(prefix="dc-callgrind-")
    if args.around:
        return around(args, workdir)
    jobs = [(build, "profiled") for build in [args.build] + args.baseline]
    if args.plain:
        jobs.append((args.build, "plain"))
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        results = list(pool.map(
            lambda job: run_one(job[0], args.steps, job[1], workdir, args.python,
                                args.native, lines=args.lines > 0), jobs))

    calls = next(run.calls for run in results if run.calls)
    print("| run | ops | runtime Ir/op | I1mr/op | D1mr/op | D1mw/op "
          "| process Ir/op | process I1mr/op |")
    print("|---|---|---|---|---|---|---|---|")
    for run in results:
        ops = run.calls or calls
        runtime = [sum(v[i] for name, v in run.totals.items() if is_runtime(name))
                   for i in range(len(EVENTS))]
        process = [sum(v[i] for v in run.totals.values()) for i in range(len(EVENTS))]
        per_op = lambda values, event: values[EVENTS.index(event)] / ops
        print("| %s | %d | %.0f | %.1f | %.1f | %.1f | %.0f | %.1f |" % (
            run.label, ops, per_op(runtime, "Ir"), per_op(runtime, "I1mr"),
            per_op(runtime, "D1mr"), per_op(runtime, "D1mw"),
            per_op(process, "Ir"), per_op(process, "I1mr")))
    print("(ops: the profile's calls; a plain run is divided by the profiled run's)")
    for run in results:
        if args.functions > 0 and run.calls:
            print()
            print("%s: the runtime's %d busiest functions, per op" % (run.label, args.functions))
            print(function_table(run.functions, run.calls, args.functions))
    for run in results:
        if run.line_rows is not None:
            print()
            print("%s: the %d functions of libdeepcontext.so with the most instruction-cache "
                  "misses, per call" % (run.label, args.lines))
            print(callgrind_lines.lines_table(run.line_rows, args.lines, short_function_name))
    print("callgrind files under %s" % workdir)
    return 0


def short_function_name(name):
    """A demangled name without its return type, parameter list, qualifiers
    and template arguments: "int ns::(anonymous namespace)::Walk<&x>(A
    const&, int) const [clone .isra.0]" is "ns::(anonymous
    namespace)::Walk"."""
    name = re.sub(r"( \[clone [^\]]*\])+$", "", name.strip())
    name = re.sub(r"( const| volatile|&|&&)+$", "", name)
    if name.endswith(")"):  # the parameter list: from its matching "("
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    kept, depth = [], 0  # template arguments, however nested
    for char in name:
        if char == "<":
            depth += 1
        elif char == ">" and depth > 0:
            depth -= 1
        elif depth == 0:
            kept.append(char)
    name = "".join(kept)
    # A return type is separated by a space outside any parentheses.
    depth = 0
    for i, char in enumerate(name):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == " " and depth == 0:
            return short_function_name(name[i + 1:]) if name[i + 1:] else name
    return name


def function_table(functions, ops, count):
    """A table of the `count` functions with the most instructions among
    `functions` (name: costs indexed like EVENTS), per op."""
    rows = ["| function | " + " | ".join(SHOWN) + " |", "|---|" + "---|" * len(SHOWN)]
    busiest = sorted(functions.items(), key=lambda item: -item[1][0])[:count]
    for name, costs in busiest:
        rows.append("| %s | %s |" % (short_function_name(name), " | ".join(
            "%.1f" % (costs[EVENTS.index(event)] / ops) for event in SHOWN)))
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
