"""Shared by the GPU twins: a timed loop that prints loop_seconds=..."""
import time

import torch


def timed(loop, steps):
    """Runs loop(step) for steps after 5 warm-up steps; prints the time."""
    for step in range(5):
        loop(step)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for step in range(steps):
        loop(step)
    torch.cuda.synchronize()
    print("loop_seconds=%.4f" % (time.perf_counter() - start), flush=True)
