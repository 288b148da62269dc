"""Bad twin of launch_bound: one tiny kernel per tensor, 400 per step."""
import torch

from gpu_common import timed

tensors = [torch.randn(1024, device="cuda") for _ in range(400)]


def step(_):
    for t in tensors:
        t.mul_(0.999)  # flagged


timed(step, 200)
