"""Summarizes a JAX profile (`deepcontext export --format json` output):
where the steady-state GPU time sits (below an HLO operation, below a
Python line inside the jitted function, still below a command buffer), and,
given jax.profiler's numbers from bench/workloads/jax_models.py for the same
steps, how far each HLO operation's device time per step is from its own.

    summarize_jax_profile.py EXPORT.json [JAX_PROFILER.json]
        [--jitted NAME,...] [--loop FUNCTION] [--again JAX_PROFILER2.json]

--jitted: the jitted functions whose lines count as inside (a frame named
NAME or ending in ".NAME", as JAX names nested functions; default "step",
bench/workloads/jax_models.py's). --loop: the per-operation comparison only
counts kernels below frames of this function (default "timed", the loop
jax_models.py times and jax.profiler traces, so that warm-up steps and
other modules' operations stay out); steady_under_loop_line is the share
of the steady GPU time below such a frame: with command buffers, the
loop's steps only replay what the warm-up call recorded, and their kernels
belong under the loop's line, not the warm-up's. Compare like with like: with command
buffers on, jax.profiler reports only `command_buffer_N`; profile both with
XLA_FLAGS=--xla_gpu_enable_command_buffer= for per-operation numbers.
--again: jax.profiler's numbers from a second process running the same
steps; it is compared with the first the same way, which shows how much of
the difference is the kernels' own run-to-run spread rather than
attribution.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                 "integration"))
from profile_tree import Tree  # noqa: E402

GPU_KINDS = ("gpu_kernel", "gpu_memcpy", "gpu_memset", "kernel")
TOLERANCE = 0.02


def named(node, names):
    return node.kind == "python" and any(node.name == n or node.name.endswith("." + n)
                                         for n in names)


def placement(tree, jitted, loop):
    """GPU time: total, in [compile], and of the rest: below an HLO op,
    below a line of the jitted function, below a command buffer op, below
    a frame of the loop function (the line that calls the jitted function
    in the loop, whose steps replay what the warm-up call recorded)."""
    total = compile_time = under_op = under_line = in_command_buffer = under_loop = 0.0
    for node in tree.nodes:
        t = node.excl("gpu_time")
        if not t or node.kind not in GPU_KINDS:
            continue
        total += t
        ancestors = list(node.ancestors())
        if any(a.kind == "phase" and a.name == "[compile]" for a in ancestors):
            compile_time += t
            continue
        ops = [a for a in ancestors if a.kind == "operator"]
        if ops:
            if ops[0].name.startswith("command_buffer"):
                in_command_buffer += t
            else:
                under_op += t
        if any(named(a, jitted) for a in ancestors):
            under_line += t
        if any(a.kind == "python" and a.name == loop for a in ancestors):
            under_loop += t
    return total, compile_time, under_op, under_line, in_command_buffer, under_loop


def ops_in_loop(tree, loop):
    """Per HLO op (the nearest operator above each kernel): GPU time (ns)
    and records, counting only kernels below a frame named `loop`."""
    per_op = {}
    for node in tree.nodes:
        t = node.excl("gpu_time")
        if not t or node.kind not in GPU_KINDS:
            continue
        ancestors = list(node.ancestors())
        if not any(a.kind == "python" and a.name == loop for a in ancestors):
            continue
        if any(a.kind == "phase" and a.name == "[compile]" for a in ancestors):
            continue
        ops = [a for a in ancestors if a.kind == "operator"]
        if not ops:
            continue
        slot = per_op.setdefault(ops[0].name, [0.0, 0])
        slot[0] += t
        slot[1] += node.exclusive["gpu_time"]["count"]
    return per_op


def reference_ops(reference):
    """jax.profiler's numbers: HLO op -> [device time (ns), events]."""
    ops = {}
    for key, (us, n) in reference["per_op"].items():
        slot = ops.setdefault(key.split("/", 1)[1], [0.0, 0])
        slot[0] += us * 1e3
        slot[1] += n
    return ops


def compare(ours, reference, label="per_op", names=("ours", "jax.profiler")):
    """Each HLO op's device time per step against jax.profiler's, both over
    the same number of steps (the loop of jax_models.py)."""
    theirs = reference_ops(reference)
    steps = reference.get("steps") or 1
    rows = []
    for name, (t, _) in ours.items():
        if name not in theirs or not theirs[name][0]:
            continue
        mine, other = t / steps, theirs[name][0] / steps
        rows.append((abs(mine - other) / other, name, mine / 1e3, other / 1e3))
    rows.sort(reverse=True)
    within = [r for r in rows if r[0] <= TOLERANCE]
    time_all = sum(r[3] for r in rows)
    time_within = sum(r[3] for r in within)
    their_total = sum(v[0] for v in theirs.values()) / steps / 1e3
    print("%s (%d steps): ops matched=%d of %s=%d, theirs=%d (%.1f%% of their time)"
          % (label, steps, len(rows), names[0], len(ours), len(theirs),
             100 * time_all / their_total if their_total else 0))
    print("%s within 2%%: ops %d/%d = %.4f, time %.4f" % (
        label, len(within), len(rows), len(within) / len(rows) if rows else 0,
        time_within / time_all if time_all else 0))
    for diff, name, ours_us, their_us in rows[:8]:
        print("  diff %.4f %-36s %s %.2f us/step %s %.2f us/step" % (
            diff, name, names[0], ours_us, names[1], their_us))
    missing = sorted(set(theirs) - set(ours), key=lambda n: -theirs[n][0])[:5]
    if missing:
        print("  not in %s: " % names[0]
              + ", ".join("%s (%.1f us/step)" % (n, theirs[n][0] / steps / 1e3)
                          for n in missing))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export")
    parser.add_argument("reference", nargs="?")
    parser.add_argument("--jitted", default="step")
    parser.add_argument("--loop", default="timed")
    parser.add_argument("--again")
    args = parser.parse_args()
    with open(args.export) as f:
        tree = Tree(json.load(f))
    jitted = [n for n in args.jitted.split(",") if n]
    total, compile_time, under_op, under_line, in_cb, under_loop = placement(tree, jitted,
                                                                           args.loop)
    steady = total - compile_time
    print("gpu_time_ms total=%.1f compile=%.1f steady=%.1f" % (total / 1e6, compile_time / 1e6,
                                                               steady / 1e6))
    share = (lambda x: x / steady) if steady else (lambda x: 0.0)
    print("steady_under_hlo_op=%.4f steady_under_jitted_line=%.4f (%s) "
          "steady_under_command_buffer=%.4f" % (share(under_op), share(under_line),
                                                ",".join(jitted), share(in_cb)))
    print("steady_under_loop_line=%.4f (%s)" % (share(under_loop), args.loop))
    meta = tree.metadata
    print("gpu_records=%s unattributed=%s dropped=%s child_nodes_linked=%s "
          "replayed_records_moved=%s" % (
              meta.get("gpu_records"), meta.get("gpu_unattributed_records"),
              meta.get("gpu_dropped_records"), meta.get("gpu_graph_child_nodes_linked", "0"),
              meta.get("gpu_xla_replayed_records_moved", "0")))
    ours = ops_in_loop(tree, args.loop)
    for name, (t, n) in sorted(ours.items(), key=lambda kv: -kv[1][0])[:8]:
        print("  op %-40s %9.3f ms %6d records" % (name, t / 1e6, n))
    if args.reference:
        with open(args.reference) as f:
            reference = json.load(f)
        compare(ours, reference)
        if args.again:
            with open(args.again) as f:
                compare(reference_ops(json.load(f)), reference, "jax.profiler_again",
                        ("again", "first"))


if __name__ == "__main__":
    main()
