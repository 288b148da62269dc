"""Trains a model with Linear and Conv2d layers; prints its losses; exits
with the status given by --exit (default 0)."""

import argparse
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        x = F.relu(self.conv(x))
        x = F.max_pool2d(x, 2)
        return self.fc(torch.flatten(x, 1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--exit", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 3, 16, 16)
    y = torch.randint(0, 10, (16,))
    for step in range(args.steps):
        optimizer.zero_grad()
        out = model(x)  # MODEL_CALL_LINE
        loss = F.cross_entropy(out, y)
        loss.backward()  # BACKWARD_LINE
        optimizer.step()
        print("step %d loss %.4f" % (step, loss.item()))
    sys.exit(args.exit)


if __name__ == "__main__":
    main()
