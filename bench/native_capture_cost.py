"""What a native capture costs, counted in place: `deepcontext run --native`
with DEEPCONTEXT_NATIVE_STATS=1 times every capture of native frames (an
op's entry, a GPU call inside an op) where it happens, so that a change to
the unwinder or to the native path cache can be told from the machine's
drift, which moves the step time of separate processes by more than native
frames cost (docs/OVERHEAD.md, "What native frames cost per op").

    python3 bench/native_capture_cost.py --build B [--baseline OTHER]
        [--model mlp] [--device cuda] [--steps 50] [--warmup 5] [--rounds 3]

Each round runs bench/workloads/gpu_models.py once under every build, one
process after the other, and reads the statistics line the runtime prints
at exit. Per build and capture site it prints the captures per step, the
nanoseconds a capture took in all and unwinding (the median over rounds,
with the lowest and highest round), and the frames walked and copied from
an earlier capture per capture, and then the frames walked per capture by
module (the library each walk went through: a GPU call's walk passes
CUPTI, the driver and the CUDA runtime before the framework's own frames).
With --baseline, each site's median total against the first build's, and
in how many rounds the first build's capture took less than the baseline's
of the same round: the builds' ranges overlap more often than not, and a
count of rounds says which way they lean without pooling a slow round into
either.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

from bench_process import step_ms

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "workloads", "gpu_models.py")
SITES = ("op_entry", "inside_op")
# One site's part of the statistics line (runtime/native/capture_stats.cc).
SITE = re.compile(
    r"\b(?P<site>op_entry|inside_op): (?P<captures>\d+) captures on \d+ threads .*?"
    r"frames walked (?P<walked>[\d.]+) \(max \d+\) copied (?P<copied>[\d.]+) per capture.*?"
    r"unwind [\d.]+ ms \((?P<unwind>\d+) ns each\), total [\d.]+ ms \((?P<total>\d+) ns each\)")
# Further on in the same site's part: "name frames, name frames, ..." up to
# the next "; ".
MODULES = re.compile(r"frames walked by module: (?P<modules>[^;]+)")


def parse_modules(text):
    """{module: frames walked per capture} of a "frames walked by module"
    list; a module's name may hold spaces, its count is the last word."""
    modules = {}
    for part in text.strip().split(", "):
        name, _, frames = part.rpartition(" ")
        if not name:
            raise ValueError("not a 'module frames' pair: %r" % part)
        modules[name] = float(frames)
    return modules


def parse_stats(stderr):
    """Per site seen in the last native_capture_stats line of a process's
    stderr: captures, frames walked and copied per capture, unwind and total
    ns per capture. Raises when the process printed none."""
    lines = [line for line in stderr.splitlines() if "native_capture_stats" in line]
    if not lines:
        raise RuntimeError("no native_capture_stats line (DEEPCONTEXT_NATIVE_STATS=1 "
                           "under --native prints one at exit):\n" + stderr[-2000:])
    line = lines[-1]
    matches = list(SITE.finditer(line))
    sites = {}
    for index, match in enumerate(matches):
        # The site's part runs to the next site's (its list of modules, when
        # it walked any frames, among it).
        end = matches[index + 1].start() if index + 1 < len(matches) else len(line)
        modules = MODULES.search(line, match.end(), end)
        sites[match.group("site")] = {
            "captures": int(match.group("captures")),
            "walked": float(match.group("walked")),
            "copied": float(match.group("copied")),
            "unwind_ns": float(match.group("unwind")),
            "total_ns": float(match.group("total")),
            "modules": parse_modules(modules.group("modules")) if modules else {},
        }
    return sites


def run_one(build, args, workdir):
    """One process of the workload under `deepcontext run --native` of
    `build`: (median step ms, per-site statistics)."""
    profile = os.path.join(workdir, "native.dctx")
    command = [os.path.join(build, "bin", "deepcontext"), "run", "--native", "-o", profile,
               "--", args.python, WORKLOAD, "--model", args.model, "--device", args.device,
               "--steps", str(args.steps), "--warmup", str(args.warmup)]
    env = dict(os.environ, DEEPCONTEXT_NATIVE_STATS="1",
               PYTHONPATH=os.path.join(os.path.abspath(build), "python"))
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, check=False)
    if result.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(command), result.stderr[-3000:]))
    return step_ms(result.stdout), parse_stats(result.stderr)


def summarize(rounds, steps):
    """Per site, over one build's rounds [(step ms, sites)]: captures per
    step, total and unwind ns per capture as (median, lowest, highest), and
    frames walked and copied per capture (medians)."""
    summary = {}
    for site in SITES:
        seen = [sites[site] for _, sites in rounds if site in sites]
        if not seen:
            continue

        def spread(field):
            values = [entry[field] for entry in seen]
            return statistics.median(values), min(values), max(values)

        summary[site] = {
            "per_step": statistics.median(entry["captures"] for entry in seen) / steps,
            "total_ns": spread("total_ns"),
            "unwind_ns": spread("unwind_ns"),
            "walked": statistics.median(entry["walked"] for entry in seen),
            "copied": statistics.median(entry["copied"] for entry in seen),
            # A module a round's walks never met counts 0 there.
            "modules": {module: statistics.median(entry.get("modules", {}).get(module, 0.0)
                                                  for entry in seen)
                        for module in sorted({name for entry in seen
                                              for name in entry.get("modules", {})})},
        }
    return summary


def rounds_lower(first, other, site):
    """(rounds where `first`'s total per capture at `site` was below
    `other`'s of the same round, rounds both saw the site)."""
    pairs = [(a[site]["total_ns"], b[site]["total_ns"])
             for (_, a), (_, b) in zip(first, other) if site in a and site in b]
    return sum(1 for a, b in pairs if a < b), len(pairs)


def table(builds, summaries, results=None):
    """Markdown rows: one per build and site, then each site's median total
    against the first build's, with the rounds where the first build's was
    lower when `results` (per build, its rounds) is given."""
    rows = ["| build | site | captures per step | total ns | unwind ns "
            "| frames walked | copied |", "|---|---|---|---|---|---|---|"]
    for build, summary in zip(builds, summaries):
        for site, entry in summary.items():
            rows.append("| %s | %s | %.0f | %.0f (%.0f-%.0f) | %.0f (%.0f-%.0f) | %.1f | %.1f |" % (
                (build, site, entry["per_step"]) + entry["total_ns"] + entry["unwind_ns"] +
                (entry["walked"], entry["copied"])))
    walked = [(build, site, entry["modules"]) for build, summary in zip(builds, summaries)
              for site, entry in summary.items() if entry.get("modules")]
    if walked:
        rows += ["", "| build | site | frames walked per capture by module (median of rounds) |",
                 "|---|---|---|"]
        for build, site, modules in walked:
            ranked = sorted(modules.items(), key=lambda item: (-item[1], item[0]))
            rows.append("| %s | %s | %s |" % (build, site, ", ".join(
                "%s %.2f" % (name, frames) for name, frames in ranked)))
    first = summaries[0]
    for index, (build, summary) in enumerate(zip(builds[1:], summaries[1:]), start=1):
        for site in SITES:
            if site in first and site in summary:
                row = "%s %s: %.3fx of %s's total per capture" % (
                    build, site, summary[site]["total_ns"][0] / first[site]["total_ns"][0],
                    builds[0])
                if results is not None:
                    lower, rounds = rounds_lower(results[0], results[index], site)
                    row += "; %s's lower in %d of %d rounds" % (builds[0], lower, rounds)
                rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--baseline", action="append", default=[],
                        help="another build to compare with (repeatable)")
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--device", default="cuda", help="cuda, or cpu")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    if args.rounds < 1 or args.steps < 1:
        parser.error("--rounds and --steps must be at least 1")
    builds = [args.build] + args.baseline
    results = {build: [] for build in builds}
    with tempfile.TemporaryDirectory(prefix="dc-native-capture-") as workdir:
        for round_index in range(args.rounds):
            for build in builds:
                step, sites = run_one(build, args, workdir)
                results[build].append((step, sites))
                print("round %d %s: step %.2f ms, %s" % (
                    round_index + 1, build, step,
                    ", ".join("%s %.0f ns" % (site, sites[site]["total_ns"])
                              for site in SITES if site in sites)), flush=True)
    # Captures of the warm-up steps count too: they are spread over all.
    summaries = [summarize(results[build], args.steps + args.warmup) for build in builds]
    for row in table(builds, summaries, [results[build] for build in builds]):
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
