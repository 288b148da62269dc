"""torch.profiler starts in a pause between two trace windows, after CUPTI
was detached: it gets the GPU activity, and DeepContext, unable to attach
again at the next window, ends GPU tracing with a warning instead of
crashing or taking CUPTI back. Kineto tries CUPTI once per process, when the
first torch.profiler starts, and that start took up to 6 s on the H200: run
with --trace-fraction 0.01 --trace-window-ms 200 (pauses of 9.9 to 29.7 s)."""

import sys
import threading
import time

import deepcontext
import torch
from torch.profiler import ProfilerActivity, profile
from trace_window_waits import wait_until, window_opens

WAIT = 60.0  # longer than the longest pause

a = torch.randn(64, 64, device="cuda")
# The first matmul loads and initializes cuBLAS, which can outlast a 200 ms
# window on a loaded machine: done here, the traced launches below are quick.
torch.mm(a, a)
torch.cuda.synchronize()
window_opens(timeout=WAIT)
for _ in range(5):
    c = a @ a  # TRACED_LINE
torch.cuda.synchronize()
wait_until(False, timeout=WAIT)
# CUDA calls early in the pause let CUPTI detach before torch.profiler
# starts (the first call's exit detaches it).
for _ in range(50):
    torch.mm(a, a)
    time.sleep(0.001)
torch.cuda.synchronize()
# Whether a window opened while Kineto took CUPTI (then it found ours).
window_during_start = threading.Event()
started_up = threading.Event()


def watch():
    while not started_up.is_set():
        if deepcontext.is_tracing():
            window_during_start.set()
        time.sleep(0.001)


watcher = threading.Thread(target=watch, daemon=True)
watcher.start()
started = time.monotonic()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    started_up.set()
    watcher.join()
    print("profiler_start_ms=%d window_during_start=%d"
          % ((time.monotonic() - started) * 1e3, window_during_start.is_set()))
    # The next window opens while torch.profiler holds CUPTI.
    wait_until(True, busy=lambda: torch.mm(a, a), timeout=WAIT)  # OTHER_CLIENT_LINE
    torch.cuda.synchronize()
kernels = sum(e.count for e in prof.key_averages() if e.device_type.name == "CUDA")
print("other client done kernels_seen_by_torch_profiler=%d" % kernels)
sys.stdout.flush()
