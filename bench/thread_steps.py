"""Prints a --thread-log of workloads/gpu_models.py: what ran beside each step.

    python3 bench/thread_steps.py THREAD_LOG.json [--slow 1.1] [--every]

Splits the timed steps into slow ones (longer than --slow times the median
step) and the rest, and prints for each group the stepping thread's mean
time on a CPU and waiting for one, its involuntary switches, how often
it ended a step on another CPU than it began it on, and how long the
other threads ran on its CPU or on that CPU's other hardware thread (as
far as the CPUs each thread was last seen on tell). A slow step that ran
as long as it took was slowed where it ran (a busy sibling, a slower
core); one that waited was kept off its CPU. With --every, one line per
step as well.

A log of gpu_models.py --ab-rounds holds steps of several blocks (plain
and each region): then it prints, per block, the mean step and each
thread's mean time on a CPU per step (the stepping thread, and the others
by name), and each region's difference from the plain steps: where a
profiler's share of the step was spent, thread by thread.
"""

import argparse
import json
import statistics
import sys


def load(path):
    with open(path) as f:
        log = json.load(f)
    for key in ("stepping_tid", "siblings", "steps"):
        if key not in log:
            raise ValueError("%s: not a thread log (no %r)" % (path, key))
    if not log["steps"]:
        raise ValueError("%s: no steps" % path)
    return log


def step_facts(log, step):
    """What one step's counters say about the stepping thread and its CPU."""
    stepping = str(log["stepping_tid"])
    me = step["threads"].get(stepping)
    if me is None:
        raise ValueError("a step without the stepping thread %s" % stepping)
    near = set()
    for cpu in (me["cpu"], me["cpu_before"]):
        near.update(log["siblings"].get(str(cpu), [cpu]))
    beside = {}
    others = 0.0
    for tid, thread in step["threads"].items():
        if tid == stepping:
            continue
        others += thread["run_ms"]
        if thread["cpu"] in near or thread["cpu_before"] in near:
            beside[thread["name"]] = beside.get(thread["name"], 0.0) + thread["run_ms"]
    return {"ms": step["ms"], "run_ms": me["run_ms"], "wait_ms": me["wait_ms"],
            "involuntary": me["involuntary"], "moved": int(me["cpu"] != me["cpu_before"]),
            "cpu": me["cpu"], "beside_ms": sum(beside.values()), "beside": beside,
            "others_ms": others}


def per_block(log):
    """{block: {"steps": n, "ms": mean step, label: mean ms on a CPU per
    step}} in the order the blocks first ran; the stepping thread is
    "stepping", its wait for a CPU "stepping waited", other threads go by
    name (threads of one name summed)."""
    blocks = {}
    stepping = str(log["stepping_tid"])
    for step in log["steps"]:
        block = blocks.setdefault(step.get("block", "timed"), {"steps": 0, "ms": 0.0})
        block["steps"] += 1
        block["ms"] += step["ms"]
        for tid, thread in step["threads"].items():
            if tid == stepping:
                block["stepping"] = block.get("stepping", 0.0) + thread["run_ms"]
                block["stepping waited"] = (block.get("stepping waited", 0.0) +
                                            thread["wait_ms"])
            else:
                block[thread["name"]] = block.get(thread["name"], 0.0) + thread["run_ms"]
    for block in blocks.values():
        for key in block:
            if key != "steps":
                block[key] /= block["steps"]
    return blocks


def print_blocks(blocks):
    """The per-block table, then each region less the plain steps."""
    totals = {}
    for block in blocks.values():
        for key, value in block.items():
            if key not in ("steps", "ms", "stepping", "stepping waited"):
                totals[key] = totals.get(key, 0.0) + value
    # Threads that ran at least 0.05 ms per step somewhere, busiest first.
    others = [name for name, _ in sorted(totals.items(), key=lambda item: -item[1])
              if any(block.get(name, 0.0) >= 0.05 for block in blocks.values())]
    columns = ["ms", "stepping", "stepping waited"] + others
    print("Mean per step (ms): the step, the stepping thread on a CPU and waiting "
          "for one, the other threads on a CPU")
    print("| block | steps | step | stepping thread | it waited | %s |" % " | ".join(others))
    print("|---|---|" + "---|" * len(columns))
    for name, block in blocks.items():
        print("| %s | %d | %s |" % (name, block["steps"], " | ".join(
            "%.2f" % block.get(column, 0.0) for column in columns)))
    plain = blocks.get("plain")
    if plain is None or len(blocks) < 2:
        return
    print()
    print("Less the plain steps (ms per step)")
    print("| block | step | stepping thread | it waited | %s |" % " | ".join(others))
    print("|---|" + "---|" * len(columns))
    for name, block in blocks.items():
        if name != "plain":
            print("| %s | %s |" % (name, " | ".join(
                "%+.2f" % (block.get(column, 0.0) - plain.get(column, 0.0))
                for column in columns)))


def summary_row(name, facts):
    if not facts:
        return "| %s | 0 | | | | | | | |" % name

    def mean(key):
        return statistics.fmean(f[key] for f in facts)

    return "| %s | %d | %.2f | %.2f | %.2f | %.1f | %.2f | %.2f | %.2f |" % (
        name, len(facts), mean("ms"), mean("run_ms"), mean("wait_ms"), mean("involuntary"),
        mean("moved"), mean("beside_ms"), mean("others_ms"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log")
    parser.add_argument("--slow", type=float, default=1.1,
                        help="a step is slow above this times the median step (1.1)")
    parser.add_argument("--every", action="store_true", help="one line per step too")
    args = parser.parse_args(argv)
    try:
        log = load(args.log)
        facts = [step_facts(log, step) for step in log["steps"]]
        blocks = per_block(log)
    except (OSError, ValueError) as error:
        sys.exit("thread_steps: %s" % error)
    except (KeyError, TypeError, AttributeError) as error:
        sys.exit("thread_steps: %s: a step's thread lacks a field or is malformed (%r)"
                 % (args.log, error))
    if len(blocks) > 1:
        print_blocks(blocks)
        if args.every:
            for index, (step, f) in enumerate(zip(log["steps"], facts)):
                print("%3d %-12s %8.2f ms  ran %7.2f waited %6.2f" % (
                    index, step.get("block", ""), f["ms"], f["run_ms"], f["wait_ms"]))
        return
    median = statistics.median(f["ms"] for f in facts)
    slow = [f for f in facts if f["ms"] > args.slow * median]
    rest = [f for f in facts if f["ms"] <= args.slow * median]
    print("%d steps, median %.2f ms; slow: above %.2f ms"
          % (len(facts), median, args.slow * median))
    print("| steps | count | step ms | ran ms | waited ms | involuntary switches "
          "| moved CPU | others beside it, ms | others anywhere, ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(summary_row("slow", slow))
    print(summary_row("rest", rest))
    if args.every:
        for index, f in enumerate(facts):
            print("%3d %8.2f ms  ran %7.2f waited %6.2f inv %3d cpu %3d%s  beside: %s" % (
                index, f["ms"], f["run_ms"], f["wait_ms"], f["involuntary"], f["cpu"],
                " (moved)" if f["moved"] else "",
                ", ".join("%s %.1f" % item for item in sorted(f["beside"].items())) or "-"))


if __name__ == "__main__":
    main()
