#!/usr/bin/env python3
"""Checks the profiles scripts/test-aarch64-root.sh made in the arm64 root.

Usage: check_root_profile.py OUT_DIR

OUT_DIR holds train.folded and native.folded (folded exports of the default
and the --native profile of examples/train_cnn.py), train.html,
train.speedscope, report.txt and analyze.txt. Exits 1, saying which layer
is missing, unless:

* a stack goes from a line of train_cnn.py through [forward] to an aten::
  operator, and one from a line of train_cnn.py through [backward] to an
  aten:: operator (the Python -> operator -> autograd layers);
* the --native profile has, between the last Python line and the first
  aten:: operator of some stack, frames the default profile never has, at
  least one of which names a native function or library;
* report.txt shows the same layers, analyze.txt is not empty, the html export
  is an HTML page and the speedscope export is speedscope JSON.
"""

import json
import os
import sys


def read_stacks(path):
    stacks = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            frames, _, weight = line.rpartition(" ")
            if not weight.isdigit():
                raise ValueError("%s: not a folded line: %r" % (path, line))
            stacks.append(frames.split(";"))
    return stacks


def is_python(frame):
    return frame.endswith(")") and ".py:" in frame


def has_layers(stack, phase):
    """train_cnn.py line -> phase -> aten:: operator, in that order."""
    try:
        user = max(i for i, f in enumerate(stack) if "train_cnn.py:" in f)
        marker = stack.index(phase, user)
    except ValueError:
        return False
    return any(f.startswith("aten::") for f in stack[marker + 1:])


def native_between(stack, known):
    """Frames between the last Python line and the first aten:: operator
    that the default profile does not have."""
    python = [i for i, f in enumerate(stack) if is_python(f)]
    ops = [i for i, f in enumerate(stack) if f.startswith("aten::")]
    if not python or not ops or ops[0] <= python[-1]:
        return []
    return [f for f in stack[python[-1] + 1:ops[0]] if f not in known]


def looks_native(frame):
    return ("::" in frame and not frame.startswith("aten::")) or ".so" in frame \
        or frame.startswith(("THP", "_Py", "Py", "torch::"))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    problems = []
    stacks = read_stacks(os.path.join(out, "train.folded"))
    for phase in ("[forward]", "[backward]"):
        if not any(has_layers(s, phase) for s in stacks):
            problems.append("no stack train_cnn.py line -> %s -> aten:: operator" % phase)

    known = {f for s in stacks for f in s}
    native_stacks = read_stacks(os.path.join(out, "native.folded"))
    native = {f for s in native_stacks for f in native_between(s, known)}
    named = sorted(f for f in native if looks_native(f))
    if not named:
        problems.append("--native profile has no native frames between Python "
                        "lines and aten:: operators (found: %s)" % sorted(native)[:10])
    else:
        print("check_root_profile: %d native frames between Python and operators, e.g. %s"
              % (len(native), ", ".join(named[:3])))

    with open(os.path.join(out, "report.txt")) as f:
        report = f.read()
    for needle in ("train_cnn.py", "aten::", "[backward]", "[forward]"):
        if needle not in report:
            problems.append("report lacks %s" % needle)
    if not os.path.getsize(os.path.join(out, "analyze.txt")):
        problems.append("analyze printed nothing")
    with open(os.path.join(out, "train.html")) as f:
        if "<html" not in f.read(4096).lower():
            problems.append("the html export is not an HTML page")
    with open(os.path.join(out, "train.speedscope")) as f:
        speedscope = json.load(f)
    if "speedscope" not in speedscope.get("$schema", ""):
        problems.append("the speedscope export has no speedscope $schema")

    for problem in problems:
        print("check_root_profile: " + problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
