"""torch.profiler (another CUPTI client) starts while the program is already
profiled by DeepContext, then stops; matrix products run before, during and
after it."""

import torch
from torch.profiler import ProfilerActivity, profile

x = torch.randn(128, 128, device="cuda")
for _ in range(10):
    y = x @ x  # BEFORE_LINE
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]):
    for _ in range(10):
        y = x @ x  # DURING_LINE
    torch.cuda.synchronize()
for _ in range(10):
    y = x @ x  # AFTER_LINE
torch.cuda.synchronize()
print("takeover done")
