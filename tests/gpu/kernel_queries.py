"""Queries on a GPU profile's tree shared by the GPU tests: the kernels
under a program's line, and how many times they ran."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

from markers import marker_line  # noqa: E402


def under_line(node, line, program):
    """True when `node` runs under line `line` of `program`."""
    name = os.path.basename(program)
    return any(a.kind == "python" and a.file.endswith(name) and a.line == line
               for a in node.ancestors())


def kernels(tree):
    """The kernel nodes that carry GPU time."""
    return [n for n in tree.nodes if "gpu_time" in n.exclusive and n.kind in ("gpu_kernel", "kernel")]


def kernels_at(tree, program, marker):
    """The kernel nodes under the line of `program` marked `marker`."""
    line = marker_line(program, marker)
    return [k for k in kernels(tree) if under_line(k, line, program)]


def launches(kernel_nodes):
    """How many kernels ran, over kernel nodes."""
    return sum(k.exclusive["gpu_time"]["count"] for k in kernel_nodes)
