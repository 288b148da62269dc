"""Fixed twin of gpu_idle: the uint8 images go to the GPU (from pinned
memory, asynchronously) and are normalized there."""
import torch

from gpu_common import timed

torch.set_num_threads(1)
torch.set_float32_matmul_precision("high")
raw = torch.randint(0, 255, (64, 3, 224, 224), dtype=torch.uint8).pin_memory()
mean = torch.tensor([0.485, 0.456, 0.406], device="cuda").view(1, 3, 1, 1)
std = torch.tensor([0.229, 0.224, 0.225], device="cuda").view(1, 3, 1, 1)
weight = torch.randn(8192, 8192, device="cuda") / 90


def preprocess(images):
    return (images.float() / 255 - mean) / std


def model(x):
    h = x.view(-1, 8192)
    for _ in range(32):
        h = h @ weight
    return h


def step(_):
    x = preprocess(raw.cuda(non_blocking=True))
    model(x).sum()


timed(step, 40)
