"""Summarizes a JAX profile (`deepcontext export --format json` output):
where the GPU time sits (below an HLO operation, in [compile], elsewhere),
and, given jax.profiler's numbers from bench/workloads/jax_models.py, the
mean device time per kernel of each HLO operation against its own.

    summarize_jax_profile.py EXPORT.json [JAX_PROFILER.json]
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                 "integration"))
from profile_tree import Tree  # noqa: E402

GPU_KINDS = ("gpu_kernel", "gpu_memcpy", "gpu_memset", "kernel")


def main():
    with open(sys.argv[1]) as f:
        tree = Tree(json.load(f))
    total = compile_time = under_op = 0.0
    per_op = {}
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
            under_op += t
            slot = per_op.setdefault(ops[0].name, [0.0, 0])
            slot[0] += t
            slot[1] += node.exclusive["gpu_time"]["count"]
    steady = total - compile_time
    print("gpu_time_ms total=%.1f compile=%.1f steady=%.1f" % (total / 1e6, compile_time / 1e6,
                                                               steady / 1e6))
    print("steady_under_hlo_op=%.4f" % (under_op / steady if steady else 0))
    meta = tree.metadata
    print("gpu_records=%s unattributed=%s dropped=%s" % (
        meta.get("gpu_records"), meta.get("gpu_unattributed_records"),
        meta.get("gpu_dropped_records")))
    top = sorted(per_op.items(), key=lambda kv: -kv[1][0])[:12]
    for name, (t, n) in top:
        print("  op %-40s %9.3f ms %6d kernels" % (name, t / 1e6, n))
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            ref = json.load(f)["per_op"]
        theirs = {}
        for key, (us, n) in ref.items():
            name = key.split("/", 1)[1]
            slot = theirs.setdefault(name, [0.0, 0])
            slot[0] += us * 1e3
            slot[1] += n
        matched = within = 0.0
        worst = []
        for name, (t, n) in per_op.items():
            if name not in theirs or not n or not theirs[name][1]:
                continue
            ours_mean = t / n
            their_mean = theirs[name][0] / theirs[name][1]
            diff = abs(ours_mean - their_mean) / their_mean
            matched += t
            if diff <= 0.02:
                within += t
            worst.append((diff, name, ours_mean / 1e3, their_mean / 1e3))
        worst.sort(reverse=True)
        print("hlo_ops matched=%d of ours=%d, theirs=%d; time within 2%% of jax.profiler's mean "
              "per kernel: %.4f" % (len(worst), len(per_op), len(theirs),
                                    within / matched if matched else 0))
        for diff, name, ours_us, their_us in worst[:6]:
            print("  diff %.4f %-36s ours %.2f us jax.profiler %.2f us" % (diff, name, ours_us,
                                                                          their_us))


if __name__ == "__main__":
    main()
