"""Bad twin of unfused_elementwise on the GPU: GELU (tanh form) written as
nine elementwise operators, nine passes over the tensor."""
import math

import torch

from gpu_common import timed

x = torch.randn(8192, 8192, device="cuda")


def gelu(v):
    return 0.5 * v * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v * v * v)))  # flagged


def step(_):
    gelu(x)


timed(step, 300)
