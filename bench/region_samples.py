"""Where a profiler's share of a training step goes, measured in one process:
CPU samples of the plain steps against those of each profiled region, per
object and per function, per step.

    python3 bench/region_samples.py --build B [--model mlp] [--steps 100]
        [--rounds 3] [--variants floor+cupti,sampled] [--device cuda]
        [--frequency 4999] [--perf "perf"] [--libraries 14] [--grown 30]
        [--compare sampled,native]

bench/workloads/gpu_models.py alternates plain steps with regions of each
variant (--ab-rounds, the in-process comparison of gpu_overhead.py) under
`perf record -k CLOCK_MONOTONIC`, and logs when each timed block ran on the
same clock (--region-log). Each sample is then charged to the block it fell
in. Separate processes scatter by 10-20 % in every object's samples (two
near-identical builds differed that much in libtorch), which hides what a
profiler does to the code around its own; in one process the plain steps
and the regions share the process's speed.

It prints, per region, the median step and the samples per step on the
application's threads (all, and in the runtime's own objects) and on the
profiler's threads; the objects with the most samples per step on the
application's threads, one column per region; and the functions, of any
object, with the most samples per step more in the first DeepContext region
than in the region before it in --variants (a floor, or the plain steps), or
in the second region that --compare names than in the first.

--callers also records each sample's call chain (perf's DWARF unwinding of
a copy of the sampled stack) and charges to the runtime, in a column of its
own, the samples it spends in what it calls: the C library, the vDSO's
clocks, the loader's thread-local lookups, the C++ runtime and the kernel
reached from the runtime's code, and the framework functions its adapter
calls (torch's RecordFunction::name). Without it those land in their own
objects and read as the code around the profiler slowing down. The
profiled region's such functions are listed last.

--perf is a command line, as for bench/runtime_samples.py.
"""

import argparse
import bisect
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from op_path_callgrind import is_runtime
from runtime_samples import REFERENCES, grown_functions, is_profiler_thread, ranked_objects

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "workloads", "gpu_models.py")
# `perf script -F comm,tid,time,ip,sym,dso`: the thread name may hold
# spaces, the symbol spaces and parentheses; the object is the last
# parenthesized field.
SAMPLE = re.compile(r"^\s*(?P<comm>.*?)\s+(?P<tid>\d+)\s+(?P<time>\d+\.\d+):\s+[0-9a-f]+\s+"
                    r"(?P<sym>.*?)\s*\((?P<dso>[^()]*)\)\s*$")
# With call chains (--callers) the header line ends at the time and each
# frame follows on a line of its own, innermost first. The script is read
# with --no-inline: resolving inlined functions made perf 6.1 spend 30 times
# longer reading the samples back, and it printed some frames as only the
# function inlined there ("(inlined)", no object), so that their samples
# went to the caller's object. Such lines are still skipped.
CHAIN_HEADER = re.compile(r"^\s*(?P<comm>.*?)\s+(?P<tid>\d+)\s+(?P<time>\d+\.\d+):\s*$")
CHAIN_FRAME = re.compile(r"^\s+[0-9a-f]+\s+(?P<sym>.*?)\s*\((?P<dso>[^()]*)\)\s*$")
# Objects whose code runs on behalf of whoever called it: the C library, the
# vDSO (clock reads), the loader (thread-local lookups), the C++ and math
# runtimes, the kernel.
HELPER_OBJECT = re.compile(r"(libc\.so\.6|libc-[\d.]+\.so|\[vdso\]|ld-linux[-\w]*\.so(\.\d+)*"
                           r"|libstdc\+\+\.so(\.[\d.]+)?|libm\.so\.6|libgcc_s\.so\.1"
                           r"|libpthread\.so\.0|\[kernel\.kallsyms\])")
# Regions that are not DeepContext: the plain steps, the floors and the
# other profilers.
NOT_DEEPCONTEXT = REFERENCES + ("proton", "torch-profiler")


def called_by_runtime(frames):
    """Whether a sample whose frames (object, innermost first, the leaf not
    in the runtime) are `frames` ran on the runtime's behalf: a helper
    object reached from the runtime through helpers only, or a function the
    runtime (its torch adapter) called directly."""
    if len(frames) < 2:
        return False
    if HELPER_OBJECT.fullmatch(frames[0]) is None:
        return is_runtime(frames[1])
    for obj in frames[1:]:
        if HELPER_OBJECT.fullmatch(obj) is None:
            return is_runtime(obj)
    return False


def parse_samples(script):
    """`perf script --no-inline -F comm,tid,time,ip,sym,dso` text: [(time,
    comm, object, symbol, ran for the runtime)], in the order given. With
    call chains the object and symbol are the innermost frame's, and the
    last field says whether the runtime called what ran (called_by_runtime);
    without, it is False."""
    samples = []
    header = None
    frames = []

    def finish():
        if header is None or not frames:
            return
        obj, symbol = frames[0]
        objects = [frame_obj for frame_obj, _ in frames]
        samples.append((float(header.group("time")), header.group("comm"), obj, symbol,
                        not is_runtime(obj) and called_by_runtime(objects)))

    for line in script.splitlines():
        match = SAMPLE.match(line)
        if match is not None:
            finish()
            header, frames = None, []
            samples.append((float(match.group("time")), match.group("comm"),
                            os.path.basename(match.group("dso")), match.group("sym"), False))
            continue
        match = CHAIN_HEADER.match(line)
        if match is not None:
            finish()
            header, frames = match, []
            continue
        match = CHAIN_FRAME.match(line)
        if match is not None and header is not None and match.group("dso") != "inlined":
            frames.append((os.path.basename(match.group("dso")), match.group("sym")))
    finish()
    return samples


class Regions:
    """The timed blocks of --region-log, to find the one a time falls in."""

    def __init__(self, spans):
        self._spans = sorted(spans, key=lambda span: span["start"])
        self._starts = [span["start"] for span in self._spans]

    def name_at(self, when):
        index = bisect.bisect_right(self._starts, when) - 1
        if index < 0 or when > self._spans[index]["end"]:
            return None
        return self._spans[index]["name"]

    def steps(self):
        """{region: timed steps}."""
        totals = {}
        for span in self._spans:
            totals[span["name"]] = totals.get(span["name"], 0) + span["steps"]
        return totals


def charge(samples, regions):
    """Per region: {"objects": {object: samples on application threads},
    "functions": {(object, function): samples there}, "runtime": samples in
    the runtime there, "calls": samples there in what the runtime called,
    "called": {(object, function): those samples}, "profiler": samples on
    the profiler's threads}. Samples outside every block (start-up,
    warm-up, region changes) are dropped."""
    per_region = {}
    for when, comm, obj, symbol, for_runtime in samples:
        name = regions.name_at(when)
        if name is None:
            continue
        entry = per_region.setdefault(name, {"objects": {}, "functions": {}, "runtime": 0,
                                             "calls": 0, "called": {}, "profiler": 0})
        if is_profiler_thread(comm):
            entry["profiler"] += 1
            continue
        entry["objects"][obj] = entry["objects"].get(obj, 0) + 1
        key = (obj, symbol)
        entry["functions"][key] = entry["functions"].get(key, 0) + 1
        if is_runtime(obj):
            entry["runtime"] += 1
        elif for_runtime:
            entry["calls"] += 1
            entry["called"][key] = entry["called"].get(key, 0) + 1
    return per_region


def comparison_pair(names):
    """(reference, profiled): the first DeepContext region and the region
    before it in `names` (plain first), or None without a DeepContext one."""
    for index, name in enumerate(names):
        if name not in NOT_DEEPCONTEXT and index > 0:
            return names[index - 1], name
    return None


def compared_regions(names, compare):
    """(reference, profiled) for the function comparison: the two regions
    of `compare` ("REFERENCE,PROFILED"), or without it comparison_pair's."""
    if compare is None:
        return comparison_pair(names)
    pair = tuple(compare.split(","))
    if len(pair) != 2 or pair[0] == pair[1] or any(name not in names for name in pair):
        raise ValueError("--compare takes two different regions of %s, not %r"
                         % (",".join(names), compare))
    return pair


def per_step(counts, steps):
    return {key: value / steps for key, value in counts.items()} if steps else {}


def progress(message):
    print("region_samples: " + message, file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--steps", type=int, default=100, help="steps per block")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", default="floor+cupti,sampled",
                        help="--ab-variants of the workload (see gpu_models.py)")
    parser.add_argument("--device", default="cuda", help="cuda, or cpu")
    parser.add_argument("--frequency", type=int, default=4999, help="samples per second")
    parser.add_argument("--perf", default="perf", help="perf's command line")
    parser.add_argument("--libraries", type=int, default=14, help="objects listed")
    parser.add_argument("--grown", type=int, default=30, help="functions listed")
    parser.add_argument("--compare", metavar="REFERENCE,PROFILED",
                        help="two regions (plain or --variants) whose functions to compare")
    parser.add_argument("--callers", action="store_true",
                        help="record call chains and charge what the runtime calls to it")
    # A helper's caller lies within a few frames of the sample; copying 4 KiB
    # per sample made the 2-core box's CPU MLP steps 1.8x slower, 1 KiB
    # left them as they were.
    parser.add_argument("--stack-bytes", type=int, default=1024,
                        help="stack copied per sample with --callers")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    perf = shlex.split(args.perf)
    if shutil.which(perf[0]) is None and not os.path.exists(perf[0]):
        parser.error("perf not found: %s (see --perf)" % args.perf)
    variants = args.variants.split(",")
    names = ["plain"] + variants
    try:
        pair = compared_regions(names, args.compare)
    except ValueError as error:
        parser.error(str(error))
    workdir = tempfile.mkdtemp(prefix="dc-regions-")
    log = os.path.join(workdir, "regions.json")
    data = os.path.join(workdir, "perf.data")
    command = [args.python, WORKLOAD, "--model", args.model, "--device", args.device,
               "--steps", str(args.steps), "--ab-rounds", str(args.rounds),
               "--ab-variants", args.variants, "--region-log", log]
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(args.build), "python"))
    chains = ["--call-graph", "dwarf,%d" % args.stack_bytes] if args.callers else []
    started = time.monotonic()
    result = subprocess.run(perf + ["record", "-q", "-k", "CLOCK_MONOTONIC", "-e", "cpu-clock",
                                    "-F", str(args.frequency)] + chains + ["-o", data, "--"]
                            + command,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            check=False)
    if result.returncode != 0 or not os.path.exists(log):
        print(result.stdout[-3000:])
        raise SystemExit("the workload failed under perf (exit %d)" % result.returncode)
    fields = dict(token.split("=", 1) for token in result.stdout.split() if "=" in token)
    # On stderr as it happens: with --callers, reading the samples back
    # (perf unwinds every one with DWARF) can take as long as the run, and
    # a run stopped by a time limit should say which part it was in.
    progress("recorded %.0f MB of samples in %.0f s; reading them back" % (
        os.path.getsize(data) / 1e6, time.monotonic() - started))
    started = time.monotonic()
    script = subprocess.run(perf + ["script", "--no-inline", "-i", data, "-F",
                                    "comm,tid,time,ip,sym,dso"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            check=True).stdout
    progress("read them back in %.0f s" % (time.monotonic() - started))
    with open(log) as f:
        regions = Regions(json.load(f))
    per_region = charge(parse_samples(script), regions)
    steps = regions.steps()
    shutil.rmtree(workdir, ignore_errors=True)

    calls_title = "| in what the runtime called " if args.callers else ""
    print("| region | median step ms | samples per step, application threads | in the runtime "
          "%s| on the profiler's threads |" % calls_title)
    print("|---|---|---|---|%s---|" % ("---|" if args.callers else ""))
    for name in names:
        entry = per_region.get(name, {"objects": {}, "runtime": 0, "calls": 0, "profiler": 0})
        count = steps.get(name, 0)
        per = (lambda value: value / count) if count else (lambda value: 0)
        calls_cell = "%.1f | " % per(entry["calls"]) if args.callers else ""
        print("| %s | %s | %.1f | %.1f | %s%.1f |" % (
            name, fields.get("ab_%s_ms" % name, "n/a"), per(sum(entry["objects"].values())),
            per(entry["runtime"]), calls_cell, per(entry["profiler"])))
    print()
    print("Objects on the application's threads, samples per step:")
    print("| object | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    objects = [per_step(per_region.get(name, {}).get("objects", {}), steps.get(name, 0))
               for name in names]
    for obj in ranked_objects(objects, args.libraries):
        print("| %s | %s |" % (obj, " | ".join("%.1f" % column.get(obj, 0)
                                               for column in objects)))
    if pair is None:
        return 0
    reference, profiled = pair
    print()
    print("Functions with the most samples per step more in %s than in %s (application's "
          "threads):" % (profiled, reference))
    print("| object | function | %s | %s | more |" % (reference, profiled))
    print("|---|---|---|---|---|")
    for obj, function, before, after in grown_functions(
            per_step(per_region.get(profiled, {}).get("functions", {}), steps.get(profiled, 0)),
            per_step(per_region.get(reference, {}).get("functions", {}), steps.get(reference, 0)),
            args.grown):
        print("| %s | %s | %.2f | %.2f | %+.2f |" % (obj, function[:100], before, after,
                                                    after - before))
    if args.callers:
        called = per_step(per_region.get(profiled, {}).get("called", {}), steps.get(profiled, 0))
        print()
        print("Outside the runtime, on its behalf, in %s (samples per step):" % profiled)
        print("| object | function | samples |")
        print("|---|---|---|")
        for (obj, function), value in sorted(called.items(),
                                             key=lambda item: (-item[1], item[0]))[:args.grown]:
            print("| %s | %s | %.2f |" % (obj, function[:100], value))
    return 0


if __name__ == "__main__":
    sys.exit(main())
