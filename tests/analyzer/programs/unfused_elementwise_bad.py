"""Bad twin of unfused_elementwise: GELU written as a chain of elementwise ops."""
import math
import torch


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def main():
    x = torch.randn(512, 512)
    for _ in range(200):
        y = gelu(x)
    print(float(y.sum()))


main()
