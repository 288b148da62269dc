"""Applies the checks of tests/gpu/test_jax_attribution.py to a profile of
tests/gpu/programs/gpu_jax.py taken elsewhere (measure_on_gpu.sh brings it
back; `deepcontext export --format json` it here):

    check_jax_profile.py EXPORT.json

Prints, per call line of main() (MARK_LAYER, MARK_LOSS), the steady GPU
time and the fractions under an HLO operation and under a line of layer()
or loss(), and whether every GEMM sits under the MARK_MATMUL line; exits 1
when a fraction is under 95 % or a GEMM is elsewhere."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))
from profile_tree import Tree  # noqa: E402

PROGRAM = os.path.join(HERE, "..", "programs", "gpu_jax.py")
GPU_KINDS = ("gpu_kernel", "gpu_memcpy", "gpu_memset", "kernel")


def marker_lines():
    lines = {}
    with open(PROGRAM) as f:
        for number, text in enumerate(f, 1):
            for marker in ("MARK_LAYER", "MARK_LOSS", "MARK_MATMUL"):
                if "# " + marker in text:
                    lines[marker] = number
    return lines


def main():
    with open(sys.argv[1]) as f:
        tree = Tree(json.load(f))
    marks = marker_lines()
    ok = True
    for marker in ("MARK_LAYER", "MARK_LOSS"):
        total = under_op = under_line = 0.0
        gemms = misplaced = 0
        for node in tree.nodes:
            t = node.excl("gpu_time")
            if not t or node.kind not in GPU_KINDS:
                continue
            ancestors = list(node.ancestors())
            if any(a.kind == "phase" and a.name == "[compile]" for a in ancestors):
                continue
            if not any(a.kind == "python" and a.name == "main" and a.line == marks[marker]
                       and a.file.endswith("gpu_jax.py") for a in ancestors):
                continue
            total += t
            # command_buffer_N only says which command buffer replayed it.
            if any(a.kind == "operator" and not a.name.startswith("command_buffer")
                   for a in ancestors):
                under_op += t
            if any(a.kind == "python" and a.name in ("layer", "loss")
                   and a.file.endswith("gpu_jax.py") for a in ancestors):
                under_line += t
            name = node.name.lower()
            if "gemm" in name or "sm90" in name:
                gemms += 1
                if not any(a.kind == "python" and a.line == marks["MARK_MATMUL"]
                           for a in ancestors):
                    misplaced += 1
        fractions = (under_op / total if total else 0, under_line / total if total else 0)
        print("%s steady_gpu_ms=%.3f under_hlo_op=%.4f under_source_line=%.4f gemm_nodes=%d "
              "gemm_nodes_elsewhere=%d" % (marker, total / 1e6, fractions[0], fractions[1],
                                           gemms, misplaced))
        ok = ok and total > 0 and min(fractions) >= 0.95 and gemms > 0 and misplaced == 0
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
