"""Bad twin of memory_peak: every step's output is kept on the GPU for
later evaluation, so the copies pile up and hold the memory peak."""
import torch

from gpu_common import timed

torch.set_float32_matmul_precision("high")
model = torch.nn.Linear(4096, 4096).cuda()
x = torch.randn(8192, 4096, device="cuda")
history = []


@torch.no_grad()
def step(_):
    y = model(x)
    history.append(y.clone())  # flagged


timed(step, 40)
