"""Fixed twin of host_device_sync: the loss is summed on the GPU and read
once."""
import torch

from gpu_common import timed

torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(8)]).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(512, 1024, device="cuda")
total = torch.zeros((), device="cuda")


def step(_):
    global total
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    total += loss.detach()


timed(step, 300)
print(total.item())
