"""Copies stdin to stdout in upper case after a few ops; args go to stderr."""

import sys

import torch

torch.relu(torch.randn(8))
sys.stderr.write("args=%r\n" % sys.argv[1:])
for line in sys.stdin:
    sys.stdout.write(line.upper())
