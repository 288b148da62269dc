"""Runs ops forever; creates the file named by argv[1] once it has started."""

import sys

import torch

x = torch.randn(64, 64)
started = False
while True:
    x = torch.tanh(torch.mm(x, x))  # LOOP_LINE
    if not started:
        open(sys.argv[1], "w").close()
        started = True
