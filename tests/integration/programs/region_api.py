"""Profiles a region with the Python API, without `deepcontext run`."""

import sys

import torch

import deepcontext

x = torch.randn(32, 32)
torch.tanh(x)  # OUTSIDE_LINE (not profiled)
with deepcontext.profile(sys.argv[1]):
    for _ in range(4):
        y = torch.mm(x, x)  # INSIDE_LINE
torch.sigmoid(x)  # AFTER_LINE (not profiled)
print("region done")
