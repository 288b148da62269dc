"""gpu_overhead.py --in-process: plain steps and deepcontext.profile()
regions alternating in one process per model (gpu_models.py --ab-rounds),
so that no process start-up or machine drift lies between them, and the
tables printed from them.

With --processes N each model runs in N such processes, one after the
other. Each process's tables get a row of their own ("mlp #2"), and a last
table gives, per region, the median over the processes of each one's
round-by-round median, with the lowest and highest. Processes of one build
disagree by more than the rounds of one process do (on one H100 instance
seven processes of the MLP put `--native` at 1.248x to 1.432x), so only
several processes say how far a result moves.

--keep-runs DIR writes each process's results to DIR (mlp-1.json,
mlp-2.json, ... numbered on from what DIR holds), and --from-runs DIR
prints the same tables from what one or more such folders hold, starting
no process: processes of several calls, each under a time limit, then add
up to one summary.
"""

import collections
import json
import os
import statistics
import tempfile

from bench_process import run
from overhead_table import WORKLOAD
import kept_runs
import round_pairs


def in_process(args, machine):
    """--in-process: per model, --processes processes one after the other,
    each alternating plain steps and deepcontext.profile() regions (see
    gpu_models.py --ab-rounds); `machine` says where they ran."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(os.path.join(args.build, "python")))
    variants = args.variants.split(",")
    print_median_step_header(variants)
    runs = []
    for model in args.models.split(","):
        for number in range(args.processes):
            label = process_label(model, number + 1, args.processes)
            values, steps = one_process(args, env, model)
            if args.keep_runs:
                kept_runs.keep(args.keep_runs, kept_runs.KeptRun(
                    model, variants, args.settle_steps, machine, values, steps))
            print(median_step_row(label, values, variants), flush=True)
            runs.append((label, model, values, steps))
    print_tables(runs, variants, args.settle_steps)


def from_kept_runs(folders, models):
    """--from-runs: the tables of runs that --keep-runs kept in `folders`,
    of `models` (None: all), as if their processes had run in one call."""
    runs = kept_runs.load(folders, models)
    first = runs[0]
    print("Kept runs: %d, from %s; device %s" % (len(runs), ", ".join(folders),
                                                first.values.get("device", "not recorded")))
    for machine in dict.fromkeys(kept.machine for kept in runs):
        print(machine)
    print_median_step_header(first.variants)
    count = collections.Counter(kept.model for kept in runs)
    number = collections.Counter()
    labelled = []
    for kept in runs:
        number[kept.model] += 1
        label = process_label(kept.model, number[kept.model], count[kept.model])
        print(median_step_row(label, kept.values, first.variants))
        labelled.append((label, kept.model, kept.values, kept.steps))
    print_tables(labelled, first.variants, first.settle_steps)


def process_label(model, number, processes):
    """A process's rows: the model, numbered ("mlp #2") where it ran in
    more than one process."""
    return model if processes == 1 else "%s #%d" % (model, number)


def print_median_step_header(variants):
    print("Each cell: median step (ratio to plain), then mean step (ratio to the plain "
          "mean); with trace windows only the mean counts the traced steps.")
    print("| model | plain, before any region (ms) | plain (ms) | %s |" % " | ".join(
        "region %s (ms, ratio)" % name for name in variants))
    print("|---|---|---|%s" % ("---|" * len(variants)))


def print_tables(runs, variants, settle_steps):
    """The tables after the first; with several processes of a model, the
    summary over them too."""
    print_process_tables(runs, variants, settle_steps)
    if max(collections.Counter(model for _, model, _, _ in runs).values()) > 1:
        print_over_processes(runs, variants)


def one_process(args, env, model):
    """One process of gpu_models.py --ab-rounds: its key=value output and its
    step log ({block name: [[step ms, ...] per round]})."""
    with tempfile.TemporaryDirectory(prefix="dc-in-process-") as work:
        step_log = os.path.join(work, "steps.json")
        output = run([args.python, WORKLOAD, "--model", model, "--steps", str(args.steps),
                      "--ab-rounds", str(args.in_process), "--ab-variants", args.variants,
                      "--ab-settle-steps", str(args.settle_steps),
                      "--device", args.device, "--step-log", step_log], env=env)
        with open(step_log) as f:
            steps = json.load(f)
    values = dict(token.split("=", 1) for token in output.split() if "=" in token)
    if "ab_plain_ms" not in values:
        raise RuntimeError("no alternating timings in %r" % output)
    return values, steps


def median_step_row(label, values, variants):
    """The first table's row: each region's median and mean step against
    the plain steps of the whole process."""
    plain = float(values["ab_plain_ms"])
    plain_mean = float(values["ab_plain_mean_ms"])
    cells = []
    for name in variants:
        ms = float(values["ab_%s_ms" % name])
        mean = float(values["ab_%s_mean_ms" % name])
        cells.append("%.2f (%.3fx), mean %.2f (%.3fx)" % (ms, ms / plain, mean,
                                                         mean / plain_mean))
    return "| %s | %.2f | %.2f, mean %.2f | %s |" % (
        label, float(values["ab_first_plain_ms"]), plain, plain_mean, " | ".join(cells))


def print_process_tables(runs, variants, settle_steps):
    """The tables after the first, a row per process: steady state, CPU
    side, DeepContext's share, other profilers, then round by round."""
    # A long profile pays the steady cost per step and the start once.
    print()
    print("Steady state: mean step after the first %d steps of each block (ratio to the "
          "plain steady mean); start: what those first steps took beyond steady ones, "
          "per block (ms)." % settle_steps)
    print("| model | plain steady (ms), start | %s |" % " | ".join(
        "region %s steady (ratio), start" % name for name in variants))
    print("|---|---|%s" % ("---|" * len(variants)))
    for label, _, values, _ in runs:
        plain_steady = float(values["ab_plain_steady_ms"])
        print("| %s | %.2f, %+.1f | %s |" % (
            label, plain_steady, float(values["ab_plain_start_ms"]), " | ".join(
                "%.2f (%.3fx), %+.1f" % (float(values["ab_%s_steady_ms" % name]),
                                         float(values["ab_%s_steady_ms" % name]) / plain_steady,
                                         float(values["ab_%s_start_ms" % name]))
                for name in variants)))
    cpu_rows = [row for row in (cpu_side_row(label, values, variants)
                                for label, _, values, _ in runs) if row]
    if cpu_rows:
        print()
        print("CPU side: median time to queue a step's work, before its synchronize "
              "(ratio to plain, and ms more). A step that waits for the GPU inside "
              "(a full launch queue, a synchronizing op) counts that wait too.")
        print("| model | plain (ms) | %s |" % " | ".join("region %s (ms)" % name
                                                       for name in variants))
        print("|---|---|%s" % ("---|" * len(variants)))
        for row in cpu_rows:
            print(row)
    print_difference_table(
        [line for label, _, values, _ in runs
         for line in own_share_rows(label, values, variants)],
        "DeepContext's own share: a region's ratio minus that of the floor every "
        "profiler observing each op (and kernel) through RecordFunction (and CUPTI) "
        "pays: floor+cupti for regions that trace the GPU, floor for those that do not.")
    print_difference_table(
        [line for label, _, values, _ in runs
         for line in versus_other_profiler_rows(label, values, variants)],
        "Against other profilers in the same process: a DeepContext region's ratio "
        "minus the other profiler's (below zero, DeepContext costs less).")
    print_ratio_tables(
        [round_rows(label, steps, variants) for label, _, _, steps in runs], variants, "rounds",
        "Round by round: each region's median step over that of the plain block of its "
        "own round (the blocks of a round ran back to back, so phases of a slow machine "
        "longer than a round fall on both); the median over the rounds, and the first "
        "and third quartiles in brackets. Trace windows compare mean steps, since their "
        "median step is an untraced one.",
        "Round by round: a region's ratio minus that of its floor, or of another "
        "profiler's region (native: of native-no-trails), in the same round; median "
        "and quartiles over the rounds.", "quartiles")

def print_difference_table(lines, text):
    """A table of difference_row lines after the paragraph that says how to
    read it; nothing without lines."""
    if not lines:
        return
    print()
    print(text)
    print("| model | region | against | median step: ratio (ms per step) "
          "| steady mean: ratio (ms per step) |")
    print("|---|---|---|---|---|")
    for line in lines:
        print(line)


def print_over_processes(runs, variants):
    """With --processes: what the processes of each model agree on."""
    models = list(dict.fromkeys(model for _, model, _, _ in runs))
    print_ratio_tables(
        [over_processes_rows(model, [steps for _, m, _, steps in runs if m == model], variants)
         for model in models], variants, "processes",
        "Over processes: the median of each process's round-by-round median, then the "
        "lowest and highest of them in brackets. Processes of one build disagree by more "
        "than the rounds of one process (where the scheduler put their threads, what the "
        "machine ran meanwhile); the spread says by how much.",
        "Over processes: each process's round-by-round median difference (as above); "
        "their median, lowest and highest.", "lowest to highest")


def print_ratio_tables(rows, variants, count, ratios_text, differences_text, spread):
    """A table of ratio rows and one of difference rows (round_rows,
    over_processes_rows: (ratio row, [difference rows]) each), each after
    the paragraph that says how to read it; `count` names the second
    column (rounds or processes), `spread` the differences' brackets."""
    print()
    print(ratios_text)
    print("| model | %s | %s |" % (count, " | ".join("region %s" % name for name in variants)))
    print("|---|---|%s" % ("---|" * len(variants)))
    for ratios, _ in rows:
        print(ratios)
    differences = [line for _, lines in rows for line in lines]
    if differences:
        print()
        print(differences_text)
        print("| model | region | against | difference (%s) |" % spread)
        print("|---|---|---|---|")
        for line in differences:
            print(line)


# Regions that are floors, not DeepContext (gpu_models.py FLOOR_VARIANTS).
FLOOR_REGIONS = ("floor", "floor-ids", "cupti-records", "cupti", "floor+cupti",
                 "floor+records", "none")
# Regions of other profilers (gpu_models.py OTHER_PROFILERS).
OTHER_PROFILER_REGIONS = ("proton", "torch-profiler")


def deepcontext_regions(variants):
    """The DeepContext regions of a run that a median step compares: not the
    floors, not other profilers, and not trace windows (under those the
    median step is an untraced one)."""
    return [name for name in variants
            if name not in FLOOR_REGIONS and name not in OTHER_PROFILER_REGIONS
            and not name.startswith("windows")]


def difference_row(model, values, name, against):
    """One table row: region `name`'s ratio to plain minus region
    `against`'s, for the median step and the steady mean, and in ms."""
    cells = []
    for key, base in (("ms", float(values["ab_plain_ms"])),
                      ("steady_ms", float(values["ab_plain_steady_ms"]))):
        added = float(values["ab_%s_%s" % (name, key)]) - float(values["ab_%s_%s" % (against, key)])
        cells.append("%+.3fx (%+.2f)" % (added / base, added))
    return "| %s | %s | %s | %s |" % (model, name, against, " | ".join(cells))


def own_share_pairs(variants):
    """(DeepContext region, its floor) of each region whose floor ran:
    floor+cupti for regions that trace the GPU, floor for those that do not."""
    pairs = []
    for name in deepcontext_regions(variants):
        floor = "floor" if name.endswith("gpu-off") else "floor+cupti"
        if floor in variants:
            pairs.append((name, floor))
    return pairs


def own_share_rows(model, values, variants):
    """Table rows of what each DeepContext region of one --in-process run
    adds to its floor, from gpu_models.py's ab_* values (ms)."""
    return [difference_row(model, values, name, floor)
            for name, floor in own_share_pairs(variants)]


def cpu_side_row(model, values, variants):
    """One table row of the time each block of an --in-process run took to
    queue a step's work (gpu_models.py ab_*_issue_ms), against the plain
    steps': what a profiler costs the CPU even where the GPU's share of the
    step hides it. The plain cell gives that time's share of the plain step
    (near 100 %: the step is bound by its CPU side). None for output of a
    gpu_models.py that did not time it."""
    if "ab_plain_issue_ms" not in values:
        return None
    plain = float(values["ab_plain_issue_ms"])
    cells = ["%.2f (%.0f %% of the step)" % (plain, 100 * plain / float(values["ab_plain_ms"]))]
    for name in variants:
        issue = float(values["ab_%s_issue_ms" % name])
        cells.append("%.2f (%.3fx, %+.2f ms)" % (issue, issue / plain, issue - plain))
    return "| %s | %s |" % (model, " | ".join(cells))


def versus_other_profiler_rows(model, values, variants):
    """Table rows of each DeepContext region that traces the GPU against each
    other profiler's region of the same run: below zero, DeepContext costs
    less."""
    return [difference_row(model, values, name, other)
            for name, other in versus_other_profiler_pairs(variants)]


def versus_other_profiler_pairs(variants):
    """(DeepContext region that traces the GPU, other profiler's region)."""
    return [(name, other)
            for name in deepcontext_regions(variants) if not name.endswith("gpu-off")
            for other in OTHER_PROFILER_REGIONS if other in variants]


def trail_pairs(variants):
    """(native, native-no-trails) where both ran: what the trails of op
    entries and GPU calls inside ops save, round by round."""
    both = {"native", "native-no-trails"} <= set(variants)
    return [("native", "native-no-trails")] if both else []


def block_statistic(name):
    """How a region's block is summed up: under trace windows the median
    step is an untraced one, so the mean."""
    return statistics.mean if name.startswith("windows") else statistics.median


def compared_pairs(variants):
    """(region, what it is compared with): its floor, other profilers'
    regions, and native against native-no-trails."""
    return own_share_pairs(variants) + versus_other_profiler_pairs(variants) + trail_pairs(variants)


def round_rows(model, steps, variants):
    """Table rows of one --in-process run's step log, round by round
    (round_pairs.py): each region's ratio to the plain block of its own
    round; then each region's difference from its floor and from the other
    profilers' regions. Medians over the rounds, quartiles in brackets."""
    ratios = "| %s | %d | %s |" % (model, len(steps["plain"]), " | ".join(
        round_pairs.ratio_cell(round_pairs.round_ratios(steps, name, block_statistic(name)))
        for name in variants))
    differences = [
        "| %s | %s | %s | %s |" % (model, name, against, round_pairs.difference_cell(
            round_pairs.round_differences(steps, name, against)))
        for name, against in compared_pairs(variants)]
    return ratios, differences


def over_processes_rows(model, step_logs, variants):
    """Table rows of several --in-process runs of one model (their step
    logs): per region, the median over processes of each one's round-by-round
    median ratio, then its lowest and highest; the same for the differences
    of round_rows."""
    def median_of_rounds(values):
        return round_pairs.quartiles(values)[1]

    ratios = "| %s | %d | %s |" % (model, len(step_logs), " | ".join(
        round_pairs.spread_cell([
            median_of_rounds(round_pairs.round_ratios(steps, name, block_statistic(name)))
            for steps in step_logs])
        for name in variants))
    differences = [
        "| %s | %s | %s | %s |" % (model, name, against, round_pairs.difference_spread_cell([
            median_of_rounds(round_pairs.round_differences(steps, name, against))
            for steps in step_logs]))
        for name, against in compared_pairs(variants)]
    return ratios, differences
