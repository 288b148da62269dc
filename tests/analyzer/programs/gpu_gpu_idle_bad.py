"""Bad twin of gpu_idle: images are normalized on the CPU every step while
the GPU waits."""
import torch

from gpu_common import timed

raw = torch.randint(0, 255, (64, 3, 224, 224), dtype=torch.uint8)
mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
conv = torch.nn.Conv2d(3, 16, 3).cuda()


def preprocess(images):
    return ((images.float() / 255 - mean) / std).contiguous()  # flagged


def step(_):
    x = preprocess(raw).cuda()
    conv(x).sum()


timed(step, 40)
