"""Fixed twin of unfused_elementwise: the fused GELU operator."""
import torch


def gelu(x):
    return torch.nn.functional.gelu(x, approximate="tanh")


def main():
    x = torch.randn(512, 512)
    for _ in range(200):
        y = gelu(x)
    print(float(y.sum()))


main()
