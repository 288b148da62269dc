"""Fixed twin of host_device_sync: the loss is summed on the GPU and read
once at the end, so the host prepares the next step while the GPU works."""
import torch

from gpu_common import timed

torch.set_float32_matmul_precision("high")
a = torch.randn(8192, 8192, device="cuda") / 90
total = torch.zeros((), device="cuda")


def prepare_next_step():
    return sum(i * i for i in range(40000))  # host work: no GPU


def step(_):
    loss = torch.mm(a, a).mean()
    total.add_(loss.detach())
    prepare_next_step()


timed(step, 300)
print(total.item())
