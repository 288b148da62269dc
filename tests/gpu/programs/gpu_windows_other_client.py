"""torch.profiler starts in a pause between two trace windows, after CUPTI
was detached: it gets the GPU activity, and DeepContext, unable to attach
again at the next window, ends GPU tracing with a warning instead of
crashing or taking CUPTI back. Run with --trace-fraction 0.4
--trace-window-ms 200."""

import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile
from trace_window_waits import wait_until, window_opens

a = torch.randn(64, 64, device="cuda")
torch.cuda.synchronize()
window_opens()
for _ in range(5):
    c = a @ a  # TRACED_LINE
torch.cuda.synchronize()
wait_until(False)
# CUDA calls early in the pause let CUPTI detach before torch.profiler
# starts (the pause first waits for the window's work).
for _ in range(50):
    torch.mm(a, a)
    time.sleep(0.001)
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    # The next window opens while torch.profiler holds CUPTI.
    wait_until(True, busy=lambda: torch.mm(a, a))  # OTHER_CLIENT_LINE
    torch.cuda.synchronize()
kernels = sum(e.count for e in prof.key_averages() if e.device_type.name == "CUDA")
print("other client done kernels_seen_by_torch_profiler=%d" % kernels)
sys.stdout.flush()
