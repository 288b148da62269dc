"""Small products on one line for about two seconds, for trace windows:
prints how many products ran, each one kernel."""

import sys
import time

import torch

a = torch.randn(64, 64, device="cuda")
torch.cuda.synchronize()
products = 0
deadline = time.monotonic() + 2.0
while time.monotonic() < deadline:
    for _ in range(50):
        c = torch.mm(a, a)  # PRODUCT_LINE
    products += 50
    torch.cuda.synchronize()
print("windows done products=%d" % products)
sys.stdout.flush()
