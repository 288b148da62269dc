"""Work for the diff tests: argv[1] matrix products at the marked line, a
fixed amount of other work, so two runs differ at that line only."""
import sys
import torch


def main(products):
    x = torch.randn(256, 256)
    y = x
    for _ in range(products):
        y = torch.mm(x, x)  # DIFF_LINE
    for _ in range(20):
        y = torch.relu(y + 1)
    print(float(y.sum()))


main(int(sys.argv[1]))
