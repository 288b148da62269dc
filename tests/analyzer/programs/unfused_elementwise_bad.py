"""Bad twin of unfused_elementwise: GELU written as a chain of elementwise ops."""
import math
import torch


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))  # chain


def main():
    torch.manual_seed(0)
    layer = torch.nn.Linear(256, 256)
    x = torch.randn(256, 256)
    with torch.no_grad():
        for _ in range(150):
            y = gelu(layer(x))
    print(float(y.sum()))


main()
