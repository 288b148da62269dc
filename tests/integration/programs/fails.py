"""Runs some ops, then fails the way --mode says."""

import os
import sys

import torch

mode = sys.argv[1]
x = torch.ones(64, 64)
for _ in range(3):
    x = torch.mm(x, x) / 64.0
print("before failure", float(x[0, 0]))
sys.stdout.flush()
if mode == "raise":
    raise ValueError("planned failure")
if mode == "sys_exit":
    sys.exit(7)
if mode == "os_exit":
    os._exit(5)
