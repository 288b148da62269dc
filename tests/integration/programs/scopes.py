"""Ops inside torch.profiler.record_function scopes."""

import torch
from torch.profiler import record_function


def step(x):
    with record_function("my_scope"):
        y = torch.relu(x)  # SCOPED_OP_LINE
        with record_function("inner_scope"):
            y = torch.sigmoid(y)
    return y


x = torch.randn(10)
for _ in range(3):
    step(x)
print("scopes done")
