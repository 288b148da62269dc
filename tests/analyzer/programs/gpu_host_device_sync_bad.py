"""Bad twin of host_device_sync: .item() every step waits for the GPU."""
import torch

from gpu_common import timed

torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(8)]).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(512, 1024, device="cuda")
total = [0.0]


def step(_):
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    total[0] += loss.item()  # flagged


timed(step, 300)
print(total[0])
