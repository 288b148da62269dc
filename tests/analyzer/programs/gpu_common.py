"""Shared by the GPU twins: a timed loop that prints loop_seconds=...

With DEEPCONTEXT_TWIN_GPU_LOCK=FILE, importing this module waits for an
exclusive lock on FILE before the program touches the GPU, and timed()
releases it once the loop has finished: twins may start, import torch and
write their profiles side by side while their GPU work runs one at a time.
The wait is printed (lock_wait_seconds=...)."""
import fcntl
import os
import time

import torch

_lock = None
_lock_wait = 0.0
if os.environ.get("DEEPCONTEXT_TWIN_GPU_LOCK"):
    _began = time.perf_counter()
    _lock = open(os.environ["DEEPCONTEXT_TWIN_GPU_LOCK"], "a")
    fcntl.flock(_lock, fcntl.LOCK_EX)
    _lock_wait = time.perf_counter() - _began


def timed(loop, steps):
    """Runs loop(step) for steps after 5 warm-up steps; prints the time of
    the steps, their count and the peak of allocated device memory."""
    for step in range(5):
        loop(step)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for step in range(steps):
        loop(step)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    print("loop_seconds=%.4f steps=%d warmup_steps=5 peak_bytes=%d lock_wait_seconds=%.3f"
          % (elapsed, steps, torch.cuda.max_memory_allocated(), _lock_wait), flush=True)
    if _lock is not None:
        fcntl.flock(_lock, fcntl.LOCK_UN)
