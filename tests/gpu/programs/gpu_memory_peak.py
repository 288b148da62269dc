"""A small AdamW training loop whose weights and optimizer state exist
before the profiled steps. argv[1]: "run" (the whole program is profiled by
`deepcontext run`) or a profile path (only the steps, in a
deepcontext.profile() region). Prints torch's own peaks over the profiled
part."""

import sys

import torch

device = torch.device("cuda")
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(2048, 4096), torch.nn.GELU(),
    torch.nn.Linear(4096, 4096), torch.nn.GELU(),
    torch.nn.Linear(4096, 1024)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = torch.randn(512, 2048, device=device)
target = torch.randn(512, 1024, device=device)


def train_step():
    optimizer.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(data), target)
    loss.backward()
    optimizer.step()


train_step()  # the optimizer state exists from here on
torch.cuda.synchronize()


def steps():
    for _ in range(5):
        train_step()
    torch.cuda.synchronize()


if sys.argv[1] == "run":
    steps()
else:
    import deepcontext

    torch.cuda.reset_peak_memory_stats()
    with deepcontext.profile(sys.argv[1]):  # REGION_LINE
        steps()
print("max_allocated=%d" % torch.cuda.max_memory_allocated())
print("max_reserved=%d" % torch.cuda.max_memory_reserved())
