"""Products on two devices from two known lines. The second device's work
is still queued when the program ends (no synchronization after it), so
its records only reach the profile if stopping waits for every device."""

import sys

import torch

PRODUCTS = 20
first, second = torch.device("cuda:0"), torch.device("cuda:1")
a0 = torch.randn(512, 512, device=first)
a1 = torch.randn(2048, 2048, device=second)
torch.cuda.synchronize(first)
torch.cuda.synchronize(second)
for _ in range(PRODUCTS):
    c0 = torch.mm(a0, a0)  # DEVICE0_LINE
torch.cuda.synchronize(first)
for _ in range(PRODUCTS):
    c1 = torch.mm(a1, a1)  # DEVICE1_LINE
print("two devices done products=%d" % PRODUCTS)
sys.stdout.flush()
