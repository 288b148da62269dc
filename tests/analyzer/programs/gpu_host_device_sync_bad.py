"""Bad twin of host_device_sync: .item() every step makes the host wait
until the GPU has finished the step, so the host's own work for the next
step (bookkeeping, preparing inputs) cannot overlap the GPU's."""
import torch

from gpu_common import timed

torch.set_float32_matmul_precision("high")
a = torch.randn(8192, 8192, device="cuda") / 90
total = [0.0]


def prepare_next_step():
    return sum(i * i for i in range(40000))  # host work: no GPU


def step(_):
    loss = torch.mm(a, a).mean()
    total[0] += loss.item()  # flagged
    prepare_next_step()


timed(step, 300)
print(total[0])
