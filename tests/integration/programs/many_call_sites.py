"""Torch ops from thousands of Python call sites, in functions alike in all
but their file or their line: two generated modules define the same
functions at the same lines, one function calls an op from each of its
many lines, and one calls ops from two lines 1024 apart with nothing
between them (lines that a table keyed by line modulo a power of two would
confuse). Every site must keep its own node."""

import sys

import torch

SITES = int(sys.argv[1]) if len(sys.argv) > 1 else 1100
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
GAP = 1024


def module_source():
    # site_i's body at line 2 i + 2; lines' ops at 2 SITES + 2 ... 3 SITES + 1;
    # gap's two ops at 3 SITES + 3 and 3 SITES + 3 + GAP.
    parts = ["def site_%d(x):\n    return x.add(1)\n" % i for i in range(SITES)]
    parts.append("def lines(x):\n" + "    x.add(1)\n" * SITES)
    parts.append("def gap(x):\n    x.add(1)\n" + "    pass\n" * (GAP - 1) + "    x.add(1)\n")
    return "".join(parts)


def load(filename):
    namespace = {}
    exec(compile(module_source(), filename, "exec"), namespace)
    return namespace


modules = [load("generated_sites_a.py"), load("generated_sites_b.py")]
x = torch.ones(4)
for _ in range(ROUNDS):
    for module in modules:
        for i in range(SITES):
            module["site_%d" % i](x)
        module["lines"](x)
        module["gap"](x)
