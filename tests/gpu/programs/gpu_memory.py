"""Device memory allocated at known lines: one block kept to the end, one
temporary block per step, freed when the step returns."""

import torch

device = torch.device("cuda")
MiB = 1 << 20
keep = torch.empty(4 * MiB, dtype=torch.uint8, device=device)  # KEEP_LINE


def step():
    temp = torch.empty(16 * MiB, dtype=torch.uint8, device=device)  # TEMP_LINE
    temp.fill_(1)


for _ in range(3):
    step()
torch.cuda.synchronize()
print("max_allocated=%d" % torch.cuda.max_memory_allocated())
