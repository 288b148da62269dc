"""Bad twin of pageable_copy: each step copies a batch from pageable memory."""
import torch

from gpu_common import timed

batch = torch.randn(64, 3, 224, 224)
weight = torch.randn(3, 3, device="cuda")


def step(_):
    x = batch.to("cuda")  # flagged
    torch.einsum("nchw,cd->ndhw", x, weight).sum()


timed(step, 200)
