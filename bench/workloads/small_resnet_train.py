"""A ResNet-50-shaped CPU training step, small enough to be op-bound.

torchvision's ResNet-50 layout (bottleneck blocks 3-4-6-3, downsample
branches, batch norm, AdamW) with narrow channels and small images: the same
Python module nesting, op count and autograd-engine-thread backward as the
GPU benchmark's ResNet-50, without torchvision and without a GPU, so that
the cost the profiler adds per op dominates the step. Prints the same line
as small_ops_train.py: `iterations=N loop_seconds=S step_median_ms=...
step_mean_ms=...`.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

from timed_steps import run_timed_steps


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, width, layers=(3, 4, 6, 3), classes=10):
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._make_layer(width, layers[0])
        self.layer2 = self._make_layer(width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * Bottleneck.expansion, classes)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * Bottleneck.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * Bottleneck.expansion, 1, stride=stride,
                          bias=False),
                nn.BatchNorm2d(planes * Bottleneck.expansion))
        layers = [Bottleneck(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * Bottleneck.expansion
        layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--width", type=int, default=4)
    parser.add_argument("--image", type=int, default=32)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--foreach", action="store_true",
                        help="AdamW's multi-tensor path (the default on GPUs)")
    parser.add_argument("--cpu-clock", action="store_true",
                        help="time steps in process CPU time (all threads)")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = ResNet(args.width)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=args.foreach)
    x = torch.randn(args.batch, 3, args.image, args.image)
    y = torch.randint(0, 10, (args.batch,))
    def step():
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

    run_timed_steps(step, args.iters, warmup=2, cpu_clock=args.cpu_clock)

if __name__ == "__main__":
    main()
