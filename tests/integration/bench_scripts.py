"""bench/ for the tests of the benchmarks: where its scripts are, and its
scripts loaded as modules."""

import importlib
import os
import sys

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                      "bench"))
WORKLOAD = os.path.join(BENCH, "workloads", "gpu_models.py")


def bench_module(name):
    """A module of bench/ (they import each other by name, as the scripts
    run from there do)."""
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    return importlib.import_module(name)
