"""Bad twin of fwd_bwd_imbalance on the GPU: a dense embedding gradient,
so each backward fills and writes the whole 4 GiB table while the forward
reads 4096 rows."""
import torch

from gpu_common import timed

table = torch.nn.Embedding(8 * 1024 * 1024, 128).cuda()
ids = torch.randint(0, 8 * 1024 * 1024, (4096,), device="cuda")


def step(_):
    loss = table(ids).sum()  # flagged
    loss.backward()
    table.weight.grad = None


timed(step, 600)
