"""bench/gpu_overhead.py --table: one row per workload (ResNet-50, GPT-2,
the launch-bound MLP, 100k tiny kernels launched through torch and through a
Triton kernel), one column per profiler (deepcontext run, --native,
--trace-fraction 0.1, torch.profiler with_stack, Proton with
context="python"), one process per cell: ratios to no profiler, the RSS the
profiler adds and mean against median step. A floor column times what every
such profiler pays before doing anything (a RecordFunction callback that
does nothing, CUPTI set up as the runtime sets it up with empty callbacks:
workloads/gpu_models.py --floor floor+cupti), and the notes give each of
DeepContext's columns less that floor, round by round."""

import json
import os
import statistics
import sys
import tempfile
import time

from bench_process import measure, run

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "workloads", "gpu_models.py")

TABLE_WORKLOADS = ("launch-torch", "launch-triton", "mlp", "resnet50", "gpt2")
FLOOR_COLUMN = "floor (RecordFunction+CUPTI)"
TABLE_COLUMNS = ("no profiler", FLOOR_COLUMN, "deepcontext run", "run --native",
                 "run --trace-fraction 0.1", "torch.profiler(with_stack)",
                 "Proton (context=python)")


def table_commands(args, cli, workload, work):
    """({column: command}, {column: profile written}, {column: environment})
    for one workload; a column without an environment inherits this one."""
    base = [args.python, WORKLOAD, "--model", workload, "--steps", str(args.steps),
            "--warmup", str(args.warmup), "--device", args.device, "--blocks", str(args.blocks)]
    if workload.startswith("launch-"):
        base += ["--launches", str(args.launches)]
    stem = os.path.join(work, workload)
    profiles = {"deepcontext run": stem + ".dctx", "run --native": stem + ".native.dctx",
                "run --trace-fraction 0.1": stem + ".windows.dctx"}
    options = {"deepcontext run": [], "run --native": ["--native"],
               "run --trace-fraction 0.1": ["--trace-fraction", "0.1"]}
    commands = {column: [cli, "run", "-q"] + options[column] + ["-o", profiles[column], "--"]
                + base for column in profiles}
    commands["no profiler"] = base
    commands["torch.profiler(with_stack)"] = base + ["--torch-profiler", stem + ".torch.json",
                                                     "--torch-profiler-timing-only"]
    commands["Proton (context=python)"] = base + ["--proton", stem + ".proton"]
    # The floor loads the build's lib/libdc_cupti_floor.so through its
    # Python package, as an in-process floor region does.
    commands[FLOOR_COLUMN] = base + ["--floor", "floor+cupti"]
    python_path = os.path.join(args.build, "python")
    if os.environ.get("PYTHONPATH"):
        python_path += os.pathsep + os.environ["PYTHONPATH"]
    environments = {FLOOR_COLUMN: dict(os.environ, PYTHONPATH=python_path)}
    return commands, profiles, environments


def table_columns(names):
    """The --table columns named in `names` (comma-separated; prefixes of
    the column titles: "run", "run --native", "Proton", ...), always with
    "no profiler" first; all of them when `names` is empty."""
    if not names:
        return TABLE_COLUMNS
    chosen = []
    for name in names.split(","):
        name = name.strip()
        # An exact title, else one ending with the name ("run" is
        # "deepcontext run"), else the shortest one starting with it.
        matches = [c for c in TABLE_COLUMNS if c == name] or \
            [c for c in TABLE_COLUMNS if c.endswith(name)] or \
            [c for c in TABLE_COLUMNS if c.startswith(name)]
        if not matches:
            raise SystemExit("--columns: no column %r (columns: %s)" % (
                name, ", ".join(TABLE_COLUMNS)))
        chosen.append(min(matches, key=len))
    return tuple(c for c in TABLE_COLUMNS if c == "no profiler" or c in chosen)


def triton_attribution(cli, profile):
    """(launches of the Triton kernel whose innermost Python frame is its
    launch line, all its launches) in a profile of the launch-triton
    workload."""
    line = 0
    with open(WORKLOAD) as f:
        for number, text in enumerate(f, start=1):
            if "# TRITON_LAUNCH_LINE" in text:
                line = number
    tree = json.loads(run([cli, "export", "--format", "json", profile]))
    nodes = tree["nodes"]
    attributed = total = 0
    for node in nodes:
        if node["kind"] != "gpu_kernel" or "add_one_kernel" not in node["name"]:
            continue
        count = node.get("exclusive", {}).get("gpu_time", {}).get("count", 0)
        total += count
        # The innermost Python frame above the kernel must be the launch
        # line: Triton's own frames (jit.py, driver.py) are hidden leaves.
        parent = node["parent"]
        while parent is not None and nodes[parent]["kind"] != "python":
            parent = nodes[parent]["parent"]
        if parent is not None:
            ancestor = nodes[parent]
            if (ancestor.get("line") == line
                    and ancestor.get("file", "").endswith("gpu_models.py")):
                attributed += count
    return attributed, total


def per_process_steps(workload, cells, columns):
    """Each process's median step per column, in the order they ran: a
    cell's median hides whether its processes agreed or split into a fast
    and a slow mode."""
    parts = ["%s %s" % (column, ", ".join("%.2f" % sample[0] for sample in cells[column]))
             for column in columns if cells[column]]
    return "%s, median step of each process (ms): %s" % (workload, "; ".join(parts))


def median_of(samples, index):
    """The median of field `index` of a cell's per-process samples."""
    return statistics.median(sample[index] for sample in samples)


def ratio_cell(plain, profiled):
    """One profiler's cell: the median step of its processes against that
    of the plain processes, then, with two rounds or more, the lowest and
    highest ratio of a profiled process to the plain process of its round
    (they ran one after the other, so they share the machine's phase).
    Cells scatter by tens of per cent between processes: the range says
    whether a difference between two cells is more than that. `plain` and
    `profiled` hold each round's (median step ms, ...) in round order; a
    column that failed stops early, so round r is index r of both."""
    ratio = median_of(profiled, 0) / median_of(plain, 0)
    paired = [mine[0] / theirs[0] for theirs, mine in zip(plain, profiled)]
    if len(paired) < 2:
        return "%.3fx" % ratio
    return "%.3fx (%.2f\u2013%.2f)" % (ratio, min(paired), max(paired))


def over_floor_cell(plain, floor, profiled):
    """A column's ratio less the floor's ratio (what the profiler adds to
    what every profiler on the same interfaces pays): the difference of the
    two cells' ratios, then, with two rounds or more, the lowest and highest
    difference within one round, whose three processes ran one after the
    other. Same inputs as ratio_cell."""
    plain_step = median_of(plain, 0)
    share = median_of(profiled, 0) / plain_step - median_of(floor, 0) / plain_step
    paired = [(mine[0] - theirs[0]) / base[0]
              for base, theirs, mine in zip(plain, floor, profiled)]
    if len(paired) < 2:
        return "%+.3fx" % share
    return "%+.3fx (%+.3f to %+.3f)" % (share, min(paired), max(paired))


def table(args):
    """--table: one row per workload, one column per profiler, ratios to no
    profiler from the same invocation (interleaved repeats)."""
    with tempfile.TemporaryDirectory(prefix="dc-gpu-table-") as work:
        return table_in(args, work)


def table_in(args, work):
    """table(), its processes' profiles and traces in `work`."""
    cli = os.path.join(args.build, "bin", "deepcontext")
    workloads = args.models.split(",") if args.models else TABLE_WORKLOADS
    columns = table_columns(args.columns)
    started = time.time()
    # The first profiled process builds the PyTorch adapter: not in any cell.
    run([cli, "run", "-q", "-o", os.path.join(work, "warm.dctx"), "--", args.python, "-c",
         "import torch; torch.ones(1).add_(1)"])
    print("adapter warm-up: %.0f s" % (time.time() - started), file=sys.stderr)
    notes = []

    def note(text):
        # On stderr at once too: a run cut short keeps what it learnt.
        print("note: " + text, file=sys.stderr, flush=True)
        notes.append(text)

    # Rows are printed as each workload finishes, so a run cut short by a
    # time limit still shows the ones done.
    print("Median step of %d (after %d warm-up), median of %d such blocks per process, median "
          "over %d interleaved processes; ratios to no profiler, in parentheses the lowest and "
          "highest ratio of a process to the plain process of its round; launch-*: %d tiny "
          "kernels per step (%dk launches per block)." % (
              args.steps, args.warmup, args.blocks, args.repeats, args.launches,
              args.steps * args.launches // 1000))
    if args.budget:
        print("Time budget %d s: a workload's later processes are skipped where they would "
              "run past it (the notes say which)." % args.budget)
    print("| workload | %s | RSS added (run / --native) | mean / median (none / run / --native) |"
          % " | ".join(columns))
    print("|---|%s---|---|" % ("---|" * len(columns)), flush=True)
    for index, workload in enumerate(workloads):
        commands, profiles, environments = table_commands(args, cli, workload, work)
        cells = {column: [] for column in TABLE_COLUMNS}
        errors = {}
        workload_started = time.time()
        for repeat in range(args.repeats):
            if repeat > 0 and args.budget:
                # Leave every later workload at least one round as long as
                # this workload's first round.
                per_round = (time.time() - workload_started) / repeat
                later = len(workloads) - index - 1
                left = args.budget - (time.time() - started)
                if per_round * (1 + later) > left:
                    note("%s: %d of %d processes per cell (--budget %d s)" % (
                        workload, repeat, args.repeats, args.budget))
                    break
            for column in columns:
                if column in errors:
                    continue
                try:
                    cells[column].append(measure(commands[column], env=environments.get(column),
                                                 timeout=args.cell_timeout))
                except (RuntimeError, KeyError) as error:
                    errors[column] = str(error).strip().splitlines()[-1][:160]
        print("%s: %.0f s so far" % (workload, time.time() - started), file=sys.stderr)
        for column, error in errors.items():
            note("%s, %s: %s" % (workload, column, error))
        if args.repeats > 1:
            note(per_process_steps(workload, cells, columns))
        if cells["no profiler"] and cells[FLOOR_COLUMN]:
            shares = ["%s %s" % (column, over_floor_cell(cells["no profiler"], cells[FLOOR_COLUMN],
                                                         cells[column]))
                      for column in ("deepcontext run", "run --native") if cells[column]]
            if shares:
                note("%s over the floor: %s" % (workload, "; ".join(shares)))
        if workload == "launch-triton" and cells["deepcontext run"]:
            attributed, total = triton_attribution(cli, profiles["deepcontext run"])
            note("launch-triton: %d of %d Triton kernel launches attributed to their "
                         "Python launch line (gpu_models.py, TRITON_LAUNCH_LINE)"
                         % (attributed, total))
        if cells["run --native"]:
            tree = json.loads(run([cli, "export", "--format", "json",
                                   profiles["run --native"]]))
            metadata = tree["sources"][0]["metadata"]
            note("%s --native: dlmonitor %s; %s" % (
                workload, metadata.get("dlmonitor", "?"),
                metadata.get("native_unwind", "no cfi-cache statistics")))
            # Contexts that allocated GPU memory, which native frames multiply.
            contexts = [metadata.get("gpu0_memory_contexts", "?")]
            if cells["deepcontext run"]:
                plain_tree = json.loads(run([cli, "export", "--format", "json",
                                             profiles["deepcontext run"]]))
                contexts.insert(0, plain_tree["sources"][0]["metadata"].get(
                    "gpu0_memory_contexts", "?"))
            if any(count != "?" for count in contexts):  # GPU memory tracked
                note("%s: contexts that allocated GPU memory (run / --native): %s" % (
                    workload, " / ".join(contexts)))
            if "native_capture_stats" in metadata:  # DEEPCONTEXT_NATIVE_STATS=1
                note("%s --native captures: %s" % (workload, metadata["native_capture_stats"]))
        if not cells["no profiler"]:
            print("| %s | %s |" % (workload, " | ".join(["n/a"] * (len(columns) + 2))),
                  flush=True)
            continue
        plain = median_of(cells["no profiler"], 0)
        row = ["%.2f ms" % plain]
        for column in columns[1:]:
            row.append(ratio_cell(cells["no profiler"], cells[column])
                       if cells[column] else "n/a")
        plain_rss = median_of(cells["no profiler"], 2)
        rss = ["%+.0f MB" % (median_of(cells[c], 2) - plain_rss) if cells[c] else "n/a"
               for c in ("deepcontext run", "run --native")]
        spread = ["%.3f" % (median_of(cells[c], 1) / median_of(cells[c], 0)) if cells[c]
                  else "n/a" for c in ("no profiler", "deepcontext run", "run --native")]
        print("| %s | %s | %s | %s |" % (workload, " | ".join(row), " / ".join(rss),
                                         " / ".join(spread)), flush=True)
    for note in notes:
        print("- " + note)
    print("total: %.0f s" % (time.time() - started), file=sys.stderr)
