"""Fixed twin of unfused_elementwise: the fused GELU operator."""
import torch


def gelu(x):
    return torch.nn.functional.gelu(x, approximate="tanh")  # one fused op


def main():
    torch.manual_seed(0)
    layer = torch.nn.Linear(256, 256)
    x = torch.randn(256, 256)
    with torch.no_grad():
        for _ in range(150):
            y = gelu(layer(x))
    print(float(y.sum()))


main()
