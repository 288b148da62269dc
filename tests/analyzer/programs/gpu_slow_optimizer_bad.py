"""Bad twin of slow_optimizer on the GPU: Adam's for-loop over 200
parameters."""
import torch

from gpu_common import timed

params = [torch.nn.Parameter(torch.randn(256, 256, device="cuda")) for _ in range(200)]
for p in params:
    p.grad = torch.randn_like(p)
opt = torch.optim.Adam(params, lr=1e-4, foreach=False)


def step(_):
    opt.step()  # flagged


timed(step, 50)
