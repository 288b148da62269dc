"""Bad twin of tensor_cores_unused: FP32 matrix products with TF32 off."""
import torch

from gpu_common import timed

torch.backends.cuda.matmul.allow_tf32 = False
a = torch.randn(4096, 4096, device="cuda")
b = torch.randn(4096, 4096, device="cuda")


def step(_):
    torch.mm(a, b)  # flagged


timed(step, 100)
