"""Run as `python3 -m pkg_main`: a module entry point with arguments."""

import sys

import torch

print("pkg_main", sys.argv[1:], float(torch.ones(3).sum()))
